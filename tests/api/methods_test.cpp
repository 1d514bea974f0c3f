// The libtorch-shaped API: method forms (derived from the op list), in-place forms and their
// autodiff rules, operators, dtype aliases, creation shorthands, Generator, positional module
// constructors and the positional functional forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "ember/data/dataset.h"
#include "ember/data/loader.h"
#include "ember/ember.h"
#include "ember/ops/registry.h"

namespace ember {
namespace detail {
std::vector<std::string> tensor_method_names();
}
namespace {

std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }

// Ops libtorch has only as free functions (or not at all on Tensor), or that ember spells as
// another method (cast = to, slice/select/... are hand-written in tensor.h).
const std::set<std::string> kNoMethod = {
    // creation and random ops are free functions in libtorch too
    "empty", "full", "zeros", "ones", "arange", "linspace", "eye", "empty_like", "zeros_like",
    "ones_like", "full_like", "rand", "randn", "randint", "normal", "uniform", "rand_like",
    "randn_like", "cast",
    // hand-written in tensor.h
    "slice", "select", "narrow", "reshape", "view", "flatten", "permute", "transpose", "squeeze",
    "unsqueeze", "expand", "contiguous", "copy", "diagonal",
    // free functions in libtorch
    "linear", "linear_int8", "linear_int4", "einsum", "one_hot", "cat", "stack", "pad", "meshgrid", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "unfold", "fold", "conv_input_grad", "conv_weight_grad",
    "nms", "roi_align", "erode", "dilate", "connected_components",  // ember::vision
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_max_pool2d", "interpolate", "layer_norm", "rms_norm",
    "group_norm", "batch_norm", "dropout", "embedding", "scaled_dot_product_attention",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity",
    "pairwise_distance", "cdist", "layer_norm_backward", "rms_norm_backward", "user_op", "where",
    "scatter_reduce", "index_put",
    // torch.linalg's functions (torch::linalg_*); the method forms are inverse, det, slogdet, ...
    "linalg_inv", "linalg_solve", "linalg_det", "linalg_slogdet", "linalg_cholesky", "linalg_qr",
    "linalg_svd", "linalg_eigh", "linalg_lu_factor", "linalg_lu_solve", "linalg_solve_triangular",
    "linalg_svdvals", "linalg_eigvalsh", "linalg_lstsq", "linalg_pinv", "linalg_matrix_rank",
    "linalg_matrix_norm", "linalg_vector_norm", "linalg_cross", "linalg_eig",
    // the FFT's primitives (ember::fft's functions dispatch them)
    "fft_c2c", "fft_r2c", "fft_c2r",
    // torch.view_as_real / torch.view_as_complex are functions only
    "view_as_real", "view_as_complex"};

TEST(TensorMethods, EveryOpIsAMethodOrListedAsFreeOnly) {
  const auto names = detail::tensor_method_names();
  const std::set<std::string> methods(names.begin(), names.end());
  for (int i = 0; i < kNumOps; ++i) {
    const std::string op = op_name(OpId(i));
    EXPECT_TRUE(methods.count(op) || kNoMethod.count(op))
        << op << " has no Tensor method: add it to ember/tensor_methods.h or to kNoMethod";
  }
  // The generated part: every Unary and Binary op has its method and in-place form.
  for (const char* m : {"square", "erfinv", "hardswish", "square_", "bitwise_left_shift",
                        "bitwise_left_shift_", "remainder_", "pow_", "logical_not_"})
    EXPECT_TRUE(methods.count(m)) << m;
  EXPECT_FALSE(methods.count("isnan_"));
}

TEST(TensorMethods, LibtorchArgumentOrderAndDefaults) {
  Tensor a = tensor(std::vector<float>{3, 1, 2, 6, 5, 4}, {2, 3});
  EXPECT_EQ(a.max().item<float>(), 6);
  EXPECT_EQ(a.argmax(1).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  auto [mx, ix] = a.max(1);
  EXPECT_EQ(vals(mx), (std::vector<float>{3, 6}));
  EXPECT_EQ(vals(a.gather(1, tensor(std::vector<int64_t>{2, 0}, {2, 1}))),
            (std::vector<float>{2, 6}));
  EXPECT_NEAR(a.var({1}).to_vector<float>()[0], 1.0f, 1e-6);
  EXPECT_NEAR(a.var({1}, false).to_vector<float>()[0], 2.0f / 3, 1e-6);  // unbiased = false
  EXPECT_EQ(vals(a.cumsum(1)), (std::vector<float>{3, 4, 6, 6, 11, 15}));
  auto [tv, ti] = a.topk(2);
  EXPECT_EQ(vals(tv), (std::vector<float>{3, 2, 6, 5}));
  EXPECT_EQ(vals(a.index_select(0, tensor({1}))), (std::vector<float>{6, 5, 4}));
  EXPECT_EQ(vals(a.pow(2).sum({0})), (std::vector<float>{45, 26, 20}));
  EXPECT_EQ(vals(a.square().sqrt()), vals(a));
  EXPECT_EQ(vals(a.clamp(2, 5)), (std::vector<float>{3, 2, 2, 5, 5, 4}));
  EXPECT_EQ(vals(a.clamp_min(4)), (std::vector<float>{4, 4, 4, 6, 5, 4}));
  EXPECT_EQ(vals(a.max(full({2, 3}, 4.f))), (std::vector<float>{4, 4, 4, 6, 5, 4}));
  EXPECT_EQ(vals(a.add(ones({3}), 2)), (std::vector<float>{5, 3, 4, 8, 7, 6}));
  EXPECT_EQ(a.div(tensor({2.f}), "floor").to_vector<float>()[0], 1);
  EXPECT_EQ(a.softmax(1).sum({1}).to_vector<float>().size(), 2u);
  EXPECT_EQ(a.split(1).size(), 2u);
  EXPECT_EQ(a.chunk(3, 1).size(), 3u);
  EXPECT_EQ(a.masked_fill(a > 4, 0).sum().item<float>(), 10);
  EXPECT_EQ(vals(a.new_zeros({2})), (std::vector<float>{0, 0}));
  EXPECT_EQ(a.new_ones({1}).dtype(), kF32);
  EXPECT_EQ(a.t().mm(a).shape(), Shape({3, 3}));
  EXPECT_EQ(vals(a.where(a > 3, -1)), (std::vector<float>{-1, -1, -1, 6, 5, 4}));
}

TEST(TensorMethods, ReductionsTakeOneIntegerDimAsLibtorchDoes) {
  Tensor a = tensor(std::vector<float>{3, 1, 2, 6, 5, 4}, {2, 3});
  EXPECT_TRUE(equal(a.sum(1), a.sum({1})));
  EXPECT_TRUE(equal(a.sum(-1, true), a.sum({1}, true)));
  EXPECT_TRUE(equal(a.sum(size_t(0), false, kF64), a.sum({0}, false, kF64)));
  EXPECT_TRUE(equal(sum(a, 1), a.sum({1})));
  // A braced list is still a Shape: {} is every dim, not dim 0.
  EXPECT_EQ(a.sum({}).item<float>(), 21);
  EXPECT_EQ(a.sum({}, true).shape(), Shape({1, 1}));
  EXPECT_EQ(sum(a, {}, true).shape(), Shape({1, 1}));
  EXPECT_TRUE(equal(a.sum({0, 1}), a.sum()));
  EXPECT_TRUE(equal(a.mean(1, true), a.mean({1}, true)));
  EXPECT_TRUE(equal(mean(a, -1), a.mean({1})));
  EXPECT_TRUE(equal(a.amax(1), a.amax({1})));
  EXPECT_TRUE(equal(a.amin(0), amin(a, 0)));
  EXPECT_TRUE(equal(amax(a, 0, true), a.amax({0}, true)));
  EXPECT_TRUE(equal((a > 3).any(0), (a > 3).any({0})));
  EXPECT_TRUE(equal((a > 1).all(1), all(a > 1, 1)));
  EXPECT_TRUE(equal(a.logsumexp(1), logsumexp(a, {1})));
  EXPECT_TRUE(equal(a.norm(2, 1), a.norm(2, {1})));
  EXPECT_TRUE(equal(norm(a, 1.0, 0), a.norm(1, {0})));
  EXPECT_TRUE(equal(a.count_nonzero(0), count_nonzero(a, 0)));
  EXPECT_TRUE(equal(a.var(1), a.var({1})));
  EXPECT_TRUE(equal(ember::var(a, 0, 0.0, true), a.var({0}, 0.0, true)));
  // libtorch's std(dim, unbiased, keepdim): the bool reads as correction 1 or 0.
  EXPECT_EQ(vals(a.std(1, /*unbiased=*/true, /*keepdim=*/true)), (std::vector<float>{1, 1}));
  EXPECT_EQ(a.std(1, true, true).shape(), Shape({2, 1}));
  EXPECT_NEAR(vals(a.std(1, /*unbiased=*/false))[0], std::sqrt(2.0f / 3), 1e-6);
  EXPECT_TRUE(equal(ember::std(a, 1, false), a.std({1}, 0.0)));
  // std(bool) / var(bool) reduce every element.
  EXPECT_TRUE(equal(a.std(true), a.std()));
  EXPECT_NEAR(a.var(false).item<float>(), 35.0f / 12, 1e-5);
  EXPECT_TRUE(a.equal(a.clone()));
  EXPECT_FALSE(a.equal(a + 1));
  EXPECT_TRUE(a.allclose(a + 1e-6f));
  EXPECT_FALSE(a.allclose(a + 1e-3f));
}

TEST(TensorMethods, InPlaceFormsWriteAndCheckDtypes) {
  Tensor x = arange(4, kF32);
  x.add_(1).mul_(2).clamp_(3, 7);
  EXPECT_EQ(vals(x), (std::vector<float>{3, 4, 6, 7}));
  x.sqrt_().square_();
  EXPECT_NEAR(x.to_vector<float>()[2], 6.f, 1e-5);
  x.zero_();
  EXPECT_EQ(x.sum().item<float>(), 0);
  x.masked_fill_(arange(4) > 1, 5).sub_(ones({4}), 2);
  EXPECT_EQ(vals(x), (std::vector<float>{-2, -2, 3, 3}));
  Tensor i = arange(4);
  EXPECT_THROW(i.div_(2), DTypeError);  // float result into int64
  EXPECT_THROW(i.sqrt_(), DTypeError);
  EXPECT_THROW(arange(3, kF32).add_(ones({2, 3})), ShapeError);  // cannot grow in place
  i.lt_(2);  // a bool result writes 0/1 into the int tensor, as in torch
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 0, 0}));
}

TEST(TensorMethods, InPlaceEditOfASavedTensorFailsAtBackward) {
  Tensor w = arange(3, kF32).requires_grad_();
  Tensor y = w.exp();  // exp saves its output
  y.mul_(2);
  EXPECT_THROW(y.sum().backward(), Error);
  Tensor leaf = ones({2}).requires_grad_();
  EXPECT_THROW(leaf.add_(1), Error);  // a leaf that requires grad cannot change in place
  // ember's nodes keep every input, so editing any input of a recorded op fails at backward
  // (stricter than PyTorch, which keeps only what a rule reads); the forward values are right.
  Tensor z = w * 3;
  z.add_(1);
  EXPECT_EQ(vals(z), (std::vector<float>{1, 4, 7}));
  EXPECT_THROW(z.sum().backward(), Error);
  // Outside the graph (no_grad), in-place edits of parameters are what optimizers do.
  {
    NoGradGuard ng;
    leaf.sub_(leaf, 0.5);
  }
  EXPECT_EQ(vals(leaf), (std::vector<float>{0.5f, 0.5f}));
}

TEST(TensorMethods, Operators) {
  Tensor a = tensor({7, -7, 12});
  EXPECT_EQ((a % 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ((a & 6).to_vector<int64_t>(), (std::vector<int64_t>{6, 0, 4}));
  EXPECT_EQ((a | 1).to_vector<int64_t>(), (std::vector<int64_t>{7, -7, 13}));
  EXPECT_EQ((a ^ a).sum().item<int64_t>(), 0);
  EXPECT_EQ((a << 1).to_vector<int64_t>(), (std::vector<int64_t>{14, -14, 24}));
  EXPECT_EQ((a >> 1).to_vector<int64_t>(), (std::vector<int64_t>{3, -4, 6}));
  EXPECT_EQ((~a).to_vector<int64_t>(), (std::vector<int64_t>{-8, 6, -13}));
  EXPECT_EQ((-a).to_vector<int64_t>(), (std::vector<int64_t>{-7, 7, -12}));
  EXPECT_EQ((1 << tensor({2})).item<int64_t>(), 4);
  Tensor b = a.clone();
  b += 1;
  b *= tensor({2});
  b -= 1;
  b %= 5;
  b <<= 1;
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 0}));  // % is Python's
  Tensor x = zeros({2, 2});
  x[0] += 1;  // through a view, like libtorch
  EXPECT_EQ(vals(x), (std::vector<float>{1, 1, 0, 0}));
  EXPECT_THROW(b /= 2, DTypeError);
}

TEST(TensorMethods, DTypeAliasesAndConversions) {
  static_assert(kFloat32 == kF32 && kFloat == kF32 && kDouble == kF64 && kLong == kI64 &&
                kInt == kI32 && kInt64 == kI64 && kByte == kU8 && kHalf == kF16 &&
                kBFloat16 == kBF16 && kChar == kI8 && kShort == kI16);
  EXPECT_EQ(arange(6, kF32).dtype(), kF32);
  EXPECT_EQ(arange(0, 6, 2, kFloat64).dtype(), kF64);
  EXPECT_EQ(zeros({2, 3}, kF64).dtype(), kF64);
  EXPECT_EQ(ones({2}, Device::flex()).device(), Device::flex());
  EXPECT_EQ(full({2}, 7, kInt32).dtype(), kI32);
  EXPECT_EQ(full({2}, 7, {kI32}).dtype(), kI32);  // the braced options form still works
  Tensor t = arange(4);
  EXPECT_EQ(t.to(kFloat).dtype(), kF32);
  EXPECT_EQ(t.to(Device::flex(), kF64).dtype(), kF64);
  EXPECT_EQ(zeros_like(t, kF16).dtype(), kF16);
  EXPECT_EQ(zeros({1}, t.options()).dtype(), kI64);
  EXPECT_EQ(t.sizes(), t.shape());
  EXPECT_FALSE(t.is_cuda());
  EXPECT_TRUE(t.cpu().is_alias_of(t));
  EXPECT_EQ(randint(5, {100}).max().item<int64_t>() < 5, true);
}

TEST(TensorMethods, GeneratorIsItsOwnStream) {
  manual_seed(3);
  Tensor g1 = rand({4});
  manual_seed(3);
  Generator gen(99);
  Tensor a = rand({4}, gen);
  Tensor g2 = rand({4});  // the global stream did not move
  EXPECT_EQ(vals(g1), vals(g2));
  Generator same(99);
  EXPECT_EQ(vals(a), vals(rand({4}, same)));
  EXPECT_NE(vals(rand({4}, gen)), vals(a));
  manual_seed(99);
  EXPECT_EQ(vals(a), vals(rand({4})));  // Generator(seed) draws what manual_seed(seed) draws
  Tensor p = randperm(10, gen);
  auto v = p.to_vector<int64_t>();
  std::sort(v.begin(), v.end());
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(v[size_t(i)], i);
  EXPECT_EQ(randint(3, {5}, gen).dtype(), kI64);
}

TEST(TensorMethods, PositionalModulesAndFunctions) {
  manual_seed(0);
  nn::Linear fc(784, 10);
  EXPECT_EQ(fc.weight.shape(), Shape({10, 784}));
  nn::Conv2d conv(1, 32, 3);
  EXPECT_EQ(conv.weight.shape(), Shape({32, 1, 3, 3}));
  nn::Embedding emb(76, 64);
  EXPECT_EQ(emb.weight.shape(), Shape({76, 64}));
  nn::LayerNorm ln(Shape{128});
  EXPECT_EQ(ln.weight.shape(), Shape({128}));
  nn::BatchNorm2d bn(32);
  EXPECT_EQ(bn.running_mean.shape(), Shape({32}));
  nn::BatchNorm2d bn_opts({.features = 3});  // the options form still works
  nn::LayerNorm ln_opts({.shape = {6}});
  EXPECT_EQ(ln_opts.weight.shape(), Shape({6}));
  nn::LSTM lstm(64, 128, 2);
  auto [out, hc] = lstm(randn({5, 3, 64}), {});
  EXPECT_EQ(out.shape(), Shape({5, 3, 128}));
  EXPECT_EQ(std::get<0>(hc).shape(), Shape({2, 3, 128}));
  EXPECT_EQ(std::get<1>(hc).shape(), Shape({2, 3, 128}));
  nn::GRU gru(4, 8);
  auto [gout, h] = gru(randn({2, 1, 4}), Tensor{});
  EXPECT_EQ(h.shape(), Shape({1, 1, 8}));
  nn::TransformerEncoderLayer layer(16, 2);
  nn::TransformerEncoder enc(layer, 2);
  enc.eval();
  Tensor src = randn({4, 1, 16});
  Tensor mask = nn::generate_square_subsequent_mask(4);
  EXPECT_TRUE(allclose(enc(src, mask), enc.forward(src, {.attn_mask = mask})));
  // conv2d(x, w, bias, stride, padding, dilation, groups) equals the options form.
  Tensor x = randn({1, 2, 6, 6}), w = randn({4, 1, 3, 3}), b = randn({4});
  EXPECT_TRUE(allclose(conv2d(x, w, b, 2, 1, 1, 2),
                       conv2d(x, w, b, {.stride = {2}, .padding = {1}, .groups = 2})));
  EXPECT_TRUE(allclose(max_pool2d(x, 2), max_pool2d(x, {.kernel_size = {2}})));
  EXPECT_TRUE(allclose(avg_pool2d(x, 3, 1, Shape{1, 1}),
                       avg_pool2d(x, {.kernel_size = {3}, .stride = {1}, .padding = {1}})));
  EXPECT_EQ(layer_norm(x, {6}).shape(), x.shape());
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {
TEST(TensorMethods, DataLoaderShufflesWithAGenerator) {
  std::vector<Tensor> items;
  for (int i = 0; i < 8; ++i) items.push_back(scalar_tensor(i));
  auto ds = data::in_memory(items);
  auto order = [&](Generator g) {
    data::DataLoader<Tensor> loader(ds, {.batch_size = 8, .shuffle = true, .generator = g});
    std::vector<int64_t> out;
    for (const Tensor& b : loader) out = b.to_vector<int64_t>();
    return out;
  };
  const auto first = order(Generator(5));
  EXPECT_EQ(first, order(Generator(5)));
  EXPECT_NE(first, order(Generator(6)));
}
}  // namespace
}  // namespace ember

// Training steps of the op families that used to take the host fallback on cuda — embeddings
// with a causal mask, a convnet with padding, group and batch norm, f64 convolution, creation and
// random draws, compactions — each checked against the host and run with the fallback counters
// reset before and expected empty after: every op of the step has a device kernel (its own, a
// generated one, or its decomposition's).
#include <ember/ember.h>
#include <gtest/gtest.h>

#include "cuda_util.h"

namespace ember {
namespace {

using testing::rel_error;

const Device kHost = Device::flex();

std::string left(const std::vector<std::pair<std::string, int64_t>>& s) {
  std::string r;
  for (const auto& [op, n] : s) r += op + " x" + std::to_string(n) + " ";
  return r;
}

// Token embeddings, a causal masked self-attention score, dropout, layer norm and a loss: the
// gradients of the embedding and the projection.
TensorList text_step(Device d, DType t) {
  manual_seed(5);
  const int64_t vocab = 50, dim = 32, T = 12;
  Tensor emb = (randn({vocab, dim}) * 0.3).to(t).to(d).set_requires_grad(true);
  Tensor proj = (randn({vocab, dim}) * 0.2).to(t).to(d).set_requires_grad(true);
  Tensor ids = randint(0, vocab, {2, T}).to(d), target = randint(0, vocab, {2 * T}).to(d);
  Tensor h = embedding(ids, emb, 0);  // [2, T, dim]
  Tensor scores = matmul(h, h.transpose(1, 2)) * (1.0 / std::sqrt(double(dim)));
  Tensor causal = logical_not(tril(ones({T, T}, {DType::Bool, d.without_layers()})));
  Tensor att = softmax(masked_fill(scores, causal, -1e9), -1);
  Tensor mixed = layer_norm(matmul(dropout(att, 0.0), h) + sum(triu(scores, 1), {-1}, true), {dim});
  Tensor logits = linear(mixed.reshape({2 * T, dim}), proj);
  Gradients g = cross_entropy(logits, target).backward();
  return {emb.grad(g), proj.grad(g)};
}

TEST(CudaFallbackFree, TextStep) {
  EMBER_REQUIRE_GPU();
  cuda::reset_fallback_stats();
  const TensorList got = text_step(Device::cuda(0).autodiff(), kF32);
  const TensorList want = text_step(kHost.autodiff(), kF64);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LT(rel_error(got[i], want[i]), 1e-4) << i;
  EXPECT_TRUE(cuda::fallback_stats().empty()) << left(cuda::fallback_stats());
}

// Reflect and constant padding, a convolution, group norm and batch norm (training), pooling:
// the gradients of the weights and the input.
TensorList conv_step(Device d, DType t) {
  manual_seed(7);
  Tensor x = randn({4, 3, 10, 10}).to(t).to(d).set_requires_grad(true);
  Tensor w1 = (randn({8, 3, 3, 3}) * 0.3).to(t).to(d).set_requires_grad(true);
  Tensor w2 = (randn({8, 8, 3, 3}) * 0.2).to(t).to(d).set_requires_grad(true);
  Tensor gw = (rand({8}) + 0.5).to(t).to(d).set_requires_grad(true);
  Tensor gb = randn({8}).to(t).to(d).set_requires_grad(true);
  Tensor rm = zeros({8}, {t, d.without_layers()}), rv = ones({8}, {t, d.without_layers()});
  Tensor y = conv2d(pad(x, {1, 1, 1, 1}, "reflect"), w1);
  y = relu(group_norm(y, 4, gw, gb));
  y = conv2d(pad(y, {1, 1, 1, 1}, "constant", 0.5), w2);
  y = relu(batch_norm(y, rm, rv, Tensor(), Tensor(), true, 0.1, 1e-5));
  y = max_pool2d(pad(y, {0, 1, 0, 1}, "replicate"), {.kernel_size = {2}});
  Gradients g = (y * y).mean().backward();
  return {x.grad(g), w1.grad(g), w2.grad(g), gw.grad(g), gb.grad(g), rv};
}

TEST(CudaFallbackFree, ConvStep) {
  EMBER_REQUIRE_GPU();
  cuda::reset_fallback_stats();
  const TensorList got = conv_step(Device::cuda(0).autodiff(), kF32);
  const TensorList want = conv_step(kHost.autodiff(), kF64);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LT(rel_error(got[i], want[i]), 1e-4) << i;
  EXPECT_TRUE(cuda::fallback_stats().empty()) << left(cuda::fallback_stats());
  // f64 convolutions run cuDNN too, forward and backward; f64 pooling is still the host
  // fallback's (docs/backends.md lists it), and only it.
  cuda::reset_fallback_stats();
  const TensorList f64 = conv_step(Device::cuda(0).autodiff(), kF64);
  for (size_t i = 0; i < f64.size(); ++i) EXPECT_LT(rel_error(f64[i], want[i]), 1e-10) << i;
  EXPECT_EQ(left(cuda::fallback_stats()), "max_pool2d x2 ");
}

// Ranges, the identity and the *_like fills equal the host's; the random draws give the host's
// streams under the same seed (uniform and integer draws exactly, normal ones to rounding).
TEST(CudaFallbackFree, CreationAndRandomMatchTheHost) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  cuda::reset_fallback_stats();
  auto same = [](const Tensor& a, const Tensor& b) { return rel_error(a, b) == 0.0; };
  for (DType t : {kF32, kF64, kF16, kBF16, DType::I64, DType::I32, DType::U8}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    EXPECT_TRUE(same(arange(3, 200, 7, {t, g}), arange(3, 200, 7, {t, kHost})));
    EXPECT_TRUE(same(arange(0.5, 40.0, 0.25, {t, g}), arange(0.5, 40.0, 0.25, {t, kHost})));
    EXPECT_TRUE(same(linspace(-3, 7, 101, {t, g}), linspace(-3, 7, 101, {t, kHost})));
    EXPECT_TRUE(same(eye(5, 7, {t, g}), eye(5, 7, {t, kHost})));
    EXPECT_TRUE(same(zeros_like(eye(3, 4, {t, g})), zeros({3, 4}, {t, kHost})));
    EXPECT_TRUE(same(full_like(eye(3, 4, {t, g}), 2), full({3, 4}, 2, {t, kHost})));
    EXPECT_TRUE(same(ones({2, 3}, {t, g}), ones({2, 3}, {t, kHost})));
    manual_seed(11);
    const Tensor ig = randint(0, 9, {1000}, {t, g});
    manual_seed(11);
    EXPECT_TRUE(same(ig, randint(0, 9, {1000}, {t, kHost})));
  }
  for (DType t : {kF32, kF64, kF16, kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    manual_seed(3);
    const Tensor ug = rand({4097}, {t, g}), ng = randn({4097}, {t, g});
    const Tensor vg = uniform(-2, 3, {999}, {t, g}), mg = normal(1, 2, {999}, {t, g});
    manual_seed(3);
    const Tensor uh = rand({4097}, {t, kHost}), nh = randn({4097}, {t, kHost});
    const Tensor vh = uniform(-2, 3, {999}, {t, kHost}), mh = normal(1, 2, {999}, {t, kHost});
    EXPECT_TRUE(same(ug, uh));
    EXPECT_LT(rel_error(vg, vh), 1e-6);
    EXPECT_LT(rel_error(ng, nh), 1e-6);
    EXPECT_LT(rel_error(mg, mh), 1e-6);
    EXPECT_EQ(rand_like(ug).device(), g);  // drawn on the device
  }
  EXPECT_TRUE(cuda::fallback_stats().empty()) << left(cuda::fallback_stats());
}

// Compactions (nonzero, masked_select) and the masked and banded selects equal the host's.
TEST(CudaFallbackFree, MasksAndCompactionsMatchTheHost) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  cuda::reset_fallback_stats();
  for (const Shape& s : {Shape{7, 9}, Shape{3, 4, 5}, Shape{100000}, Shape{}, Shape{0, 3}}) {
    SCOPED_TRACE(shape_str(s));
    manual_seed(1);
    const Tensor x = randn(s), m = rand(s) < 0.3;
    EXPECT_EQ(rel_error(nonzero(m.to(g)), nonzero(m)), 0.0);
    EXPECT_EQ(rel_error(nonzero(x.to(g) > 0.5), nonzero(x > 0.5)), 0.0);
    EXPECT_EQ(rel_error(masked_select(x.to(g), m.to(g)), masked_select(x, m)), 0.0);
    EXPECT_EQ(rel_error(masked_fill(x.to(g), m.to(g), 2.5), masked_fill(x, m, 2.5)), 0.0);
    if (s.size() >= 2)
      for (int64_t k : {-2, 0, 1, 3}) {
        EXPECT_EQ(rel_error(tril(x.to(g), k), tril(x, k)), 0.0) << k;
        EXPECT_EQ(rel_error(triu(x.to(g), k), triu(x, k)), 0.0) << k;
      }
  }
  EXPECT_TRUE(cuda::fallback_stats().empty()) << left(cuda::fallback_stats());
}

}  // namespace
}  // namespace ember

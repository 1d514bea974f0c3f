// The fused-epilogue entry points of the cpu backend (ember/backends/cpu/dnnl_ops.h) against the
// unfused flex result, the "can oneDNN do this" queries, the primitive cache and threads.
#include <filesystem>

#include "cpu_test_util.h"
#include "ember/backends/flex/thread_pool.h"

namespace ember::test {
namespace {

namespace F = nn::functional;
using cpu::Activation;
using cpu::Epilogue;

struct Act {
  const char* name;
  Activation act;
  float alpha, beta;
  Tensor (*ref)(const Tensor&);
};
const Act kActs[] = {
    {"relu", Activation::Relu, 0, 0, [](const Tensor& x) { return relu(x); }},
    {"leaky_relu", Activation::LeakyRelu, 0.1f, 0,
     [](const Tensor& x) { return leaky_relu(x, 0.1); }},
    {"elu", Activation::Elu, 0.5f, 0, [](const Tensor& x) { return elu(x, 0.5); }},
    {"gelu_erf", Activation::GeluErf, 0, 0, [](const Tensor& x) { return gelu(x); }},
    {"gelu_tanh", Activation::GeluTanh, 0, 0, [](const Tensor& x) { return gelu(x, "tanh"); }},
    {"silu", Activation::Silu, 0, 0, [](const Tensor& x) { return silu(x); }},
    {"sigmoid", Activation::Sigmoid, 0, 0, [](const Tensor& x) { return sigmoid(x); }},
    {"tanh", Activation::Tanh, 0, 0, [](const Tensor& x) { return tanh(x); }},
    {"mish", Activation::Mish, 0, 0, [](const Tensor& x) { return mish(x); }},
    {"hardswish", Activation::Hardswish, 0, 0, [](const Tensor& x) { return hardswish(x); }},
    {"softplus", Activation::Softplus, 0, 0, [](const Tensor& x) { return softplus(x); }},
    {"clamp", Activation::Clamp, -0.5f, 0.75f,
     [](const Tensor& x) { return clamp(x, Scalar(-0.5), Scalar(0.75)); }},
    {"square", Activation::Square, 0, 0, [](const Tensor& x) { return square(x); }},
    {"abs", Activation::Abs, 0, 0, [](const Tensor& x) { return abs(x); }},
    {"exp", Activation::Exp, 0, 0, [](const Tensor& x) { return exp(x); }},
};

class DnnlOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::dnnl_available()) GTEST_SKIP() << "built without oneDNN";
    cpu::set_skinny_rows(0);  // these test oneDNN's paths, small shapes included
  }
  void TearDown() override { cpu::set_skinny_rows(32); }
  static Tensor c(const Tensor& t) { return t.to(Device::cpu().eager()); }
};

// Outside these tests, products of a few rows run flex's skinny kernels (faster there).
TEST(DnnlSkinny, ProductsOfFewRowsRunFlexsKernels) {
  if (!cpu::dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  const Device cpu = Device::cpu().eager();
  const Tensor x = rnd({16, 64}), w = rnd({48, 64}), b = rnd({48});
  int64_t before = cpu::dnnl_stats().served;
  Tensor y = linear(x.to(cpu), w.to(cpu), b.to(cpu));
  EXPECT_EQ(cpu::dnnl_stats().served, before);
  EXPECT_TRUE(allclose(y.to(Device::flex()), linear(x, w, b), 1e-5, 1e-5));
  const Tensor xl = rnd({64, 64});
  before = cpu::dnnl_stats().served;
  Tensor z = linear(xl.to(cpu), w.to(cpu), b.to(cpu));
  EXPECT_EQ(cpu::dnnl_stats().served, before + 1);
  EXPECT_TRUE(allclose(z.to(Device::flex()), linear(xl, w, b), 1e-4, 1e-4));
}

// A weight gradient of a small step (a^T @ g, short inner dim: an RNN's h^T @ dgates) runs
// flex's GEMM too; the same product with a larger output, or a^T not being a transposed view,
// stays with oneDNN.
TEST(DnnlSkinny, SmallTransposedProductsRunFlexsKernels) {
  if (!cpu::dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  const Device cpu = Device::cpu().eager();
  const Tensor h = rnd({32, 128}), g = rnd({32, 512});
  int64_t before = cpu::dnnl_stats().served;
  Tensor dw = mm(h.to(cpu).t(), g.to(cpu));
  EXPECT_EQ(cpu::dnnl_stats().served, before);
  EXPECT_TRUE(allclose(dw.to(Device::flex()), mm(h.t(), g), 1e-4, 1e-4));
  before = cpu::dnnl_stats().served;
  Tensor dc = mm(h.to(cpu).t().contiguous(), g.to(cpu));
  EXPECT_EQ(cpu::dnnl_stats().served, before + 1);
  EXPECT_TRUE(allclose(dc.to(Device::flex()), mm(h.t(), g), 1e-4, 1e-4));
  const Tensor hl = rnd({32, 1024}), gl = rnd({32, 512});
  before = cpu::dnnl_stats().served;
  Tensor big = mm(hl.to(cpu).t(), gl.to(cpu));
  EXPECT_EQ(cpu::dnnl_stats().served, before + 1);
  EXPECT_TRUE(allclose(big.to(Device::flex()), mm(hl.t(), gl), 1e-4, 1e-4));
}

TEST_F(DnnlOps, LinearBiasActivationResidual) {
  const Tensor x = rnd({24, 40}), w = rnd({32, 40}), b = rnd({32}), r = rnd({24, 32});
  const Tensor lin = linear(x, w, b);  // flex, unfused
  for (const Act& a : kActs) {
    SCOPED_TRACE(a.name);
    Epilogue ep{.act = a.act, .alpha = a.alpha, .beta = a.beta};
    ASSERT_TRUE(cpu::can_linear(c(x), c(w), c(b), ep));
    EXPECT_EQ(mismatch(cpu::linear(c(x), c(w), c(b), ep), a.ref(lin), 1e-4, 1e-5), "");
    ep.residual = c(r);  // act(...) + r
    ASSERT_TRUE(cpu::can_linear(c(x), c(w), c(b), ep));
    EXPECT_EQ(mismatch(cpu::linear(c(x), c(w), c(b), ep), a.ref(lin) + r, 1e-4, 1e-5), "");
    ep.residual_first = true;  // act(... + r)
    EXPECT_EQ(mismatch(cpu::linear(c(x), c(w), c(b), ep), a.ref(lin + r), 1e-4, 1e-5), "");
  }
}

TEST_F(DnnlOps, ScaleBiasAndBroadcastResidual) {
  // Attention scores: scale * q @ k^T + mask, the mask per batch (broadcast over heads).
  const Tensor q = rnd({2, 4, 16, 8}), k = rnd({2, 4, 16, 8}), mask = rnd({2, 1, 16, 16});
  Epilogue ep{.scale = 0.125f, .residual = c(mask)};
  ASSERT_TRUE(cpu::can_matmul(c(q), c(k).transpose(-1, -2), ep));
  const Tensor got = cpu::matmul(c(q), c(k).transpose(-1, -2), ep);
  EXPECT_EQ(mismatch(got, matmul(q, k.transpose(-1, -2)) * 0.125 + mask, 1e-5, 1e-5), "");
  // oneDNN's GEMM takes no residual broadcast over every batch dim (only its reference loop
  // would): the query says so, and the planner keeps that add apart.
  EXPECT_FALSE(cpu::can_matmul(c(q), c(k).transpose(-1, -2), {.residual = c(rnd({16, 16}))}));
  // A scaled linear: the scale multiplies the product, not the bias.
  const Tensor x = rnd({3, 5, 12}), w = rnd({7, 12}), b = rnd({7});
  Epilogue s{.scale = 0.5f, .act = Activation::Relu};
  ASSERT_TRUE(cpu::can_linear(c(x), c(w), c(b), s));
  EXPECT_EQ(
      mismatch(cpu::linear(c(x), c(w), c(b), s), relu(matmul(x, w.t()) * 0.5 + b), 1e-5, 1e-5), "");
}

TEST_F(DnnlOps, ConvBiasActivationResidual) {
  const Attrs a = [] {
    Attrs r;
    r.ints2 = {1};
    r.ints3 = {1};
    r.ints4 = {1};
    r.i[0] = 1;
    return r;
  }();
  const Tensor x = rnd({3, 8, 12, 12}), w = rnd({8, 8, 3, 3}), b = rnd({8});
  const Tensor y = F::conv2d(x, w, b, {.padding = {1}});
  for (const Act& act : kActs) {
    SCOPED_TRACE(act.name);
    Epilogue ep{.act = act.act, .alpha = act.alpha, .beta = act.beta};
    ASSERT_TRUE(cpu::can_conv(OpId::conv2d, a, c(x), c(w), c(b), ep));
    EXPECT_EQ(mismatch(cpu::conv(OpId::conv2d, a, c(x), c(w), c(b), ep), act.ref(y), 1e-4, 1e-4),
              "");
  }
  // ResNet's block: relu(conv(x) + b + x).
  Epilogue res{.act = Activation::Relu, .residual = c(x), .residual_first = true};
  ASSERT_TRUE(cpu::can_conv(OpId::conv2d, a, c(x), c(w), c(b), res));
  EXPECT_EQ(mismatch(cpu::conv(OpId::conv2d, a, c(x), c(w), c(b), res), relu(y + x), 1e-4, 1e-4),
            "");
  Epilogue add{.residual = c(x)};
  EXPECT_EQ(mismatch(cpu::conv(OpId::conv2d, a, c(x), c(w), c(b), add), y + x, 1e-4, 1e-4), "");
  // Not one primitive: an activation before the residual add, and an output scale.
  EXPECT_FALSE(cpu::can_conv(OpId::conv2d, a, c(x), c(w), c(b),
                             {.act = Activation::Relu, .residual = c(x)}));
  EXPECT_FALSE(cpu::can_conv(OpId::conv2d, a, c(x), c(w), c(b), {.scale = 2.f}));
  EXPECT_FALSE(cpu::can_conv(OpId::conv2d, a, c(x), c(w), c(b), {.residual = c(rnd({8, 12, 12}))}));
}

TEST_F(DnnlOps, QueriesRefuseWhatOneDnnDoesNotServe) {
  const Tensor a = rnd({4, 5}), b = rnd({5, 6});
  EXPECT_TRUE(cpu::can_matmul(c(a), c(b)));
  EXPECT_FALSE(cpu::can_matmul(c(a.to(DType::F64)), c(b.to(DType::F64))));
  EXPECT_FALSE(cpu::can_matmul(c(a.to(DType::I32)), c(b.to(DType::I32))));
  EXPECT_FALSE(cpu::can_matmul(c(rnd({4, 0})), c(rnd({0, 6}))));
  EXPECT_FALSE(cpu::can_matmul(c(a), c(b), {.residual = c(rnd({3, 6}))}));  // no broadcast
  EXPECT_THROW(cpu::matmul(c(a.to(DType::F64)), c(b.to(DType::F64))), Error);
  Attrs conv;
  conv.ints2 = {1}, conv.ints3 = {0}, conv.ints4 = {1}, conv.i[0] = 1;
  EXPECT_FALSE(cpu::can_conv(OpId::conv2d, conv, c(rnd({1, 2, 5, 5}, DType::F64)),
                             c(rnd({2, 2, 3, 3}, DType::F64)), Tensor()));
}

TEST_F(DnnlOps, PlacedOutputsAreWrittenInPlace) {
  // A planner's placed output (OpCall::out): the kernel writes it, the dispatcher copies nothing.
  const Tensor a = rnd({32, 24}), b = rnd({24, 16});
  const Tensor ins[] = {c(a), c(b)};
  const Tensor out = c(rnd({32, 16}));
  const Tensor placed[] = {out};
  Attrs none;
  MetaList meta;
  meta.add({32, 16}, DType::F32);
  const OpCall call{OpId::mm, none, ins, meta, Device::cpu(), nullptr, placed};
  const int64_t served = cpu::dnnl_stats().served;
  const TensorList r = backend_for(Backend::Cpu)->kernel(OpId::mm).fn(call);
  EXPECT_EQ(cpu::dnnl_stats().served, served + 1);
  EXPECT_EQ(r[0].impl(), out.impl());
  EXPECT_EQ(mismatch(out, mm(a, b), 1e-5, 1e-5), "");
  // A call oneDNN does not serve (f64) falls back to flex's kernel, which writes it in place too.
  const Tensor ins64[] = {c(a.to(DType::F64)), c(b.to(DType::F64))};
  const Tensor out64 = c(rnd({32, 16}, DType::F64));
  const Tensor placed64[] = {out64};
  MetaList meta64;
  meta64.add({32, 16}, DType::F64);
  const OpCall call64{OpId::mm, none, ins64, meta64, Device::cpu(), nullptr, placed64};
  const TensorList r64 = backend_for(Backend::Cpu)->kernel(OpId::mm).fn(call64);
  EXPECT_EQ(cpu::dnnl_stats().served, served + 1);
  EXPECT_EQ(r64[0].impl(), out64.impl());
  EXPECT_EQ(mismatch(out64, mm(a.to(DType::F64), b.to(DType::F64)), 1e-5, 1e-5), "");
  // The fused entry points take one too.
  const Tensor x = rnd({2, 8, 6, 6}), w = rnd({8, 8, 3, 3}), bias = rnd({8}), lw = rnd({16, 24});
  Attrs conv;
  conv.ints2 = {1}, conv.ints3 = {1}, conv.ints4 = {1}, conv.i[0] = 1;
  const Tensor y = c(rnd({2, 8, 6, 6}));
  EXPECT_EQ(cpu::conv(OpId::conv2d, conv, c(x), c(w), c(bias), {.act = Activation::Relu}, y).impl(),
            y.impl());
  EXPECT_EQ(mismatch(y, relu(F::conv2d(x, w, bias, {.padding = {1}})), 1e-4, 1e-4), "");
  // And the conv kernel, through the kernel table.
  const Tensor conv_ins[] = {c(x), c(w), c(bias)};
  const Tensor yk = c(rnd({2, 8, 6, 6}));
  const Tensor placed_conv[] = {yk};
  MetaList conv_meta;
  conv_meta.add({2, 8, 6, 6}, DType::F32);
  const OpCall conv_call{OpId::conv2d, conv, conv_ins, conv_meta, Device::cpu(), nullptr,
                         placed_conv};
  const int64_t before = cpu::dnnl_stats().served;
  EXPECT_EQ(backend_for(Backend::Cpu)->kernel(OpId::conv2d).fn(conv_call)[0].impl(), yk.impl());
  EXPECT_EQ(cpu::dnnl_stats().served, before + 1);
  EXPECT_EQ(mismatch(yk, F::conv2d(x, w, bias, {.padding = {1}}), 1e-4, 1e-4), "");
  const Tensor z = c(rnd({32, 16}));
  EXPECT_EQ(cpu::linear(c(a), c(lw), Tensor(), {}, z).impl(), z.impl());
  EXPECT_EQ(mismatch(z, linear(a, lw, Tensor()), 1e-5, 1e-5), "");
  // A placed output of another shape, or not contiguous, is the caller's error.
  EXPECT_THROW(cpu::matmul(c(a), c(b), {}, c(rnd({16, 32}))), ValueError);
  EXPECT_THROW(cpu::matmul(c(a), c(b), {}, c(rnd({16, 32})).t()), ValueError);
}

TEST_F(DnnlOps, SecondCallCreatesNoPrimitive) {
  const Tensor a = c(rnd({37, 29})), b = c(rnd({29, 41}));
  (void)mm(a, b);
  const cpu::DnnlStats s1 = cpu::dnnl_stats();
  (void)mm(a, b);
  const cpu::DnnlStats s2 = cpu::dnnl_stats();
  EXPECT_EQ(s2.primitives_created, s1.primitives_created);
  EXPECT_EQ(s2.hits, s1.hits + 1);
  EXPECT_EQ(s2.misses, s1.misses);
  // The same for a convolution (its reorders included) and a pooling.
  const Tensor x = c(rnd({2, 8, 10, 10})), w = c(rnd({8, 8, 3, 3}));
  (void)F::conv2d(x, w, {}, {.padding = {1}});
  (void)F::max_pool2d(x, {.kernel_size = {3}});
  const int64_t made = cpu::dnnl_stats().primitives_created;
  (void)F::conv2d(x, w, {}, {.padding = {1}});
  (void)F::max_pool2d(x, {.kernel_size = {3}});
  EXPECT_EQ(cpu::dnnl_stats().primitives_created, made);
}

TEST_F(DnnlOps, CacheIsBoundedLru) {
  const int64_t old = cpu::dnnl_stats().capacity;
  cpu::set_dnnl_cache_capacity(2);
  EXPECT_LE(cpu::dnnl_stats().size, 2);
  const int64_t ev = cpu::dnnl_stats().evictions;
  for (int64_t n : {3, 4, 5}) (void)mm(c(rnd({n, 7})), c(rnd({7, 2})));
  EXPECT_EQ(cpu::dnnl_stats().size, 2);
  EXPECT_GE(cpu::dnnl_stats().evictions, ev + 1);
  // The least recently used went first: 4 and 5 hit, 3 misses again.
  int64_t miss = cpu::dnnl_stats().misses;
  (void)mm(c(rnd({5, 7})), c(rnd({7, 2})));
  (void)mm(c(rnd({4, 7})), c(rnd({7, 2})));
  EXPECT_EQ(cpu::dnnl_stats().misses, miss);
  (void)mm(c(rnd({3, 7})), c(rnd({7, 2})));
  EXPECT_EQ(cpu::dnnl_stats().misses, miss + 1);
  cpu::set_dnnl_cache_capacity(0);
  EXPECT_EQ(cpu::dnnl_stats().size, 0);
  cpu::set_dnnl_cache_capacity(old);
}

// Threads of this process (its tasks in /proc).
int process_threads() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

TEST_F(DnnlOps, ThreadsFollowEmbersPool) {
  EXPECT_EQ(cpu::dnnl_threads(), flex::num_threads());
  const int old = flex::num_threads();
  flex::set_num_threads(1);
  EXPECT_EQ(cpu::dnnl_threads(), 1);
  flex::set_num_threads(old);
  EXPECT_EQ(cpu::dnnl_threads(), old);
  // Inside a parallel region (a kernel reached from a pool worker): one thread, no second team.
  std::atomic<int> most{0};
  flex::parallel_for(4, 1,
                     [&](int64_t, int64_t) { most = std::max(most.load(), cpu::dnnl_threads()); });
  EXPECT_EQ(most.load(), 1);
  // Calls big enough to split over the pool give the same results whatever the pool's size
  // (primitives are chosen per piece), and oneDNN starts no threads of its own (no OpenMP team
  // next to ember's pool).
  const Tensor a = rnd({256, 192}), b = rnd({192, 160});
  const Tensor x = rnd({3, 16, 20, 20}), w = rnd({32, 16, 3, 3});
  auto both = [&] {
    return std::pair{mm(c(a), c(b)), F::conv2d(c(x), c(w), {}, {.padding = {1}})};
  };
  (void)both();
  const int threads = process_threads();
  for (int n : {1, 2, 3}) {
    flex::set_num_threads(n);
    (void)both();
    const int64_t served = cpu::dnnl_stats().served;
    const auto [y, z] = both();
    EXPECT_EQ(cpu::dnnl_stats().served, served + 2);
    EXPECT_EQ(mismatch(y, mm(a, b), 1e-4, 1e-4), "") << n << " threads";
    EXPECT_EQ(mismatch(z, F::conv2d(x, w, {}, {.padding = {1}}), 1e-4, 1e-4), "") << n;
    EXPECT_LE(process_threads(), threads + std::max(0, n - old)) << n << " threads";
  }
  flex::set_num_threads(old);
}

}  // namespace
}  // namespace ember::test

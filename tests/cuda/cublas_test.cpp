// cuBLASLt products against flex at f32/bf16/f16 (relative error against float64 as METHOD.md's
// "Correct first" says: f32 far under 1e-3, bf16/f16 under 1e-2), epilogues, layouts that are
// read in place (transposed views, broadcast batches) and the plan cache.
#include "cuda/cuda_util.h"
#include "ember/backends/cuda/cublas_ops.h"

namespace ember {
namespace {

using testing::rel_error;

double tol(DType t) { return t == kF32 ? 1e-5 : 1e-2; }

Tensor ref_matmul(const Tensor& a, const Tensor& b) {
  return matmul(a.to(Device::flex()).to(kF64), b.to(Device::flex()).to(kF64));
}

TEST(CudaCublas, ProductsMatchFlex) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  struct Shapes { Shape a, b; };
  const std::vector<Shapes> cases = {{{64, 32}, {32, 48}}, {{7, 5}, {5, 3}}, {{4, 33, 17}, {4, 17, 9}},
                                     {{2, 3, 16, 8}, {8, 12}}, {{16}, {16, 5}}, {{6, 16}, {16}},
                                     {{3, 1, 5, 7}, {4, 7, 2}}};
  for (DType t : {kF32, kBF16, kF16})
    for (const auto& c : cases) {
      Tensor a = randn(c.a, {kF32}).to(t), b = randn(c.b, {kF32}).to(t);
      Tensor got = matmul(a.to(g), b.to(g));
      EXPECT_EQ(got.device(), g);
      EXPECT_EQ(got.shape(), ref_matmul(a, b).shape());
      EXPECT_LT(rel_error(got, ref_matmul(a, b)), tol(t)) << dtype_name(t) << " " << shape_str(c.a);
    }
}

TEST(CudaCublas, TransposedViewsReadInPlace) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  Tensor a = randn({40, 24}, {kF32}), b = randn({56, 40}, {kF32});
  const auto before = cuda::cublas_stats();
  Tensor got = mm(a.to(g).t(), b.to(g).t());  // [24, 40] @ [40, 56], both transposed views
  EXPECT_LT(rel_error(got, ref_matmul(a.t(), b.t())), 1e-5);
  EXPECT_EQ(cuda::cublas_stats().operand_copies, before.operand_copies);
  Tensor x = randn({5, 6, 40}, {kF32}), w = randn({24, 40}, {kF32}), bias = randn({24}, {kF32});
  Tensor y = linear(x.to(g), w.to(g), bias.to(g));
  Tensor ref = linear(x.to(kF64), w.to(kF64), bias.to(kF64));
  EXPECT_LT(rel_error(y, ref), 1e-5);
  Tensor bx = randn({3, 8, 4}, {kF32}), by = randn({3, 4, 5}, {kF32});
  EXPECT_LT(rel_error(bmm(bx.to(g), by.to(g)), ref_matmul(bx, by)), 1e-5);
}

TEST(CudaCublas, Epilogues) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  for (DType t : {kF32, kBF16, kF16}) {
    Tensor x = randn({33, 64}, {kF32}).to(t), w = randn({48, 64}, {kF32}).to(t);
    Tensor bias = randn({48}, {kF32}).to(t), res = randn({33, 48}, {kF32}).to(t);
    Tensor x64 = x.to(kF64), w64 = w.to(kF64), b64 = bias.to(kF64), r64 = res.to(kF64);
    cuda::Epilogue relu_ep{.act = cuda::Activation::Relu};
    ASSERT_TRUE(cuda::can_linear(x.to(g), w.to(g), bias.to(g), relu_ep));
    EXPECT_LT(rel_error(cuda::linear(x.to(g), w.to(g), bias.to(g), relu_ep),
                        relu(linear(x64, w64, b64))), tol(t));
    cuda::Epilogue gelu_ep{.act = cuda::Activation::GeluTanh};
    EXPECT_LT(rel_error(cuda::linear(x.to(g), w.to(g), bias.to(g), gelu_ep),
                        gelu(linear(x64, w64, b64), "tanh")), tol(t) * 10);
    cuda::Epilogue res_ep{.scale = 0.5f, .residual = res.to(g)};
    EXPECT_LT(rel_error(cuda::linear(x.to(g), w.to(g), bias.to(g), res_ep),
                        linear(x64, w64, Tensor()) * 0.5 + b64 + r64), tol(t));
    cuda::Epilogue erf{.act = cuda::Activation::GeluErf};
    EXPECT_FALSE(cuda::can_linear(x.to(g), w.to(g), bias.to(g), erf));  // no erf GELU in cuBLASLt
    Tensor out = empty({33, 48}, {t, g});
    Tensor r = cuda::matmul(x.to(g), w.to(g).t(), {}, out);
    EXPECT_TRUE(r.is_alias_of(out));
    EXPECT_LT(rel_error(out, matmul(x64, w64.t())), tol(t));
  }
}

TEST(CudaCublas, Tf32AndPlanCache) {
  EMBER_REQUIRE_GPU();
  const Device g = Device::cuda(0);
  Tensor a = randn({256, 256}, {kF32}), b = randn({256, 256}, {kF32});
  Tensor da = a.to(g), db = b.to(g);
  const double exact = rel_error(matmul(da, db), ref_matmul(a, b));
  EXPECT_LT(exact, 1e-5);
  const auto s0 = cuda::cublas_stats();
  (void)matmul(da, db).to(Device::flex());  // read: on the lazy device an unread product never runs
  EXPECT_EQ(cuda::cublas_stats().plans, s0.plans);
  EXPECT_GT(cuda::cublas_stats().plan_hits, s0.plan_hits);
  cuda::set_allow_tf32(true);
  const double tf32 = rel_error(matmul(da, db), ref_matmul(a, b));
  cuda::set_allow_tf32(false);
  EXPECT_LT(tf32, 3e-3);
}

TEST(CudaCublas, IntegerProductsFallBack) {
  EMBER_REQUIRE_GPU();
  Tensor a = arange(6, {kI64}).reshape({2, 3}), b = arange(6, {kI64}).reshape({3, 2});
  EXPECT_TRUE(equal(matmul(a.to(Device::cuda(0)), b.to(Device::cuda(0))).to(Device::flex()),
                    matmul(a, b)));
}

}  // namespace
}  // namespace ember

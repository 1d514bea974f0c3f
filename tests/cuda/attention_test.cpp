// scaled_dot_product_attention on cuda:0 through the fused kernels (attention_kernel.cu): the
// output and the q, k, v gradients against float64 on the host from the same rounded inputs,
// causal and masked (bool and additive), odd lengths (no tile multiple), queries and keys of
// different lengths, head sizes 32, 64, 80 and 128, strided q; and the calls the fused kernels do
// not serve (f32, dropout) still right through the decomposition. Every test skips without a GPU.
#include <gtest/gtest.h>

#include "cuda/cuda_util.h"
#include "ember/ember.h"
#include "ember/user_op.h"

namespace ember {
namespace {
namespace F = nn::functional;
using testing::rel_error;

struct Case {
  int64_t b, h, l, s, e;
  bool causal = false;
  int mask = 0;  // 0 none, 1 bool [L, S], 2 additive f32 [B, 1, L, S]
  bool strided_q = false;
  std::optional<double> scale = {};
};

std::string name_of(const Case& c, DType t) {
  return std::string(dtype_name(t)) + " b" + std::to_string(c.b) + " h" + std::to_string(c.h) +
         " L" + std::to_string(c.l) + " S" + std::to_string(c.s) + " E" + std::to_string(c.e) +
         (c.causal ? " causal" : "") + (c.mask ? " mask" + std::to_string(c.mask) : "") +
         (c.strided_q ? " strided" : "");
}

// Output and q, k, v gradients of sum(attention(q, k, v) * r) on `d` in dtype `dt`, from inputs
// already rounded to the tested dtype.
std::vector<Tensor> run(const Case& c, Device d, DType dt, const Tensor& q0, const Tensor& k0,
                        const Tensor& v0, const Tensor& m0, const Tensor& r0) {
  Tensor q = q0.to(dt).to(d).set_requires_grad(true);
  Tensor k = k0.to(dt).to(d).set_requires_grad(true);
  Tensor v = v0.to(dt).to(d).set_requires_grad(true);
  Tensor qa = q;
  if (c.strided_q) qa = q.transpose(1, 2).contiguous().transpose(1, 2);  // [b, l, h, e] memory
  Tensor m = m0.defined() ? (m0.dtype() == kBool ? m0.to(d) : m0.to(dt).to(d)) : Tensor();
  Tensor y = F::scaled_dot_product_attention(
      qa, k, v, {.attn_mask = m, .is_causal = c.causal, .scale = c.scale});
  Gradients g = (y * r0.to(dt).to(d)).sum().backward();
  return {y, g.get(q), g.get(k), g.get(v)};
}

void check(const Case& c, DType t) {
  SCOPED_TRACE(name_of(c, t));
  Tensor q0 = randn({c.b, c.h, c.l, c.e}).to(t), k0 = randn({c.b, c.h, c.s, c.e}).to(t);
  Tensor v0 = randn({c.b, c.h, c.s, c.e}).to(t), r0 = randn({c.b, c.h, c.l, c.e}).to(t);
  Tensor m0;
  if (c.mask == 1) {  // keep about 70% of the keys, and key 0 for every query
    m0 = logical_or(lt(rand({c.l, c.s}), 0.7), eq(arange(c.s, {kI64}), 0));
  } else if (c.mask == 2) {
    m0 = (randn({c.b, 1, c.l, c.s}) * 2.0).to(t);
  }
  cuda::reset_fallback_stats();
  const auto got = run(c, Device::cuda(0).autodiff(), t, q0, k0, v0, m0, r0);
  const auto want = run(c, Device::flex().autodiff(), kF64, q0, k0, v0, m0, r0);
  const double tol = 2e-2;
  EXPECT_EQ(got[0].dtype(), t);
  EXPECT_LT(rel_error(got[0], want[0]), tol) << "output";
  EXPECT_LT(rel_error(got[1], want[1]), tol) << "dq";
  EXPECT_LT(rel_error(got[2], want[2]), tol) << "dk";
  EXPECT_LT(rel_error(got[3], want[3]), tol) << "dv";
  cuda::synchronize(0);
  EXPECT_TRUE(cuda::fallback_stats().empty()) << cuda::fallback_stats().front().first;
}

TEST(CudaAttention, FusedMatchesTheHostCausalAndPlain) {
  EMBER_REQUIRE_GPU();
  manual_seed(1);
  check({.b = 2, .h = 3, .l = 77, .s = 77, .e = 64, .causal = true}, kBF16);
  check({.b = 1, .h = 2, .l = 200, .s = 200, .e = 64, .causal = true, .strided_q = true}, kF16);
  check({.b = 2, .h = 2, .l = 130, .s = 130, .e = 128, .causal = true}, kBF16);
  check({.b = 1, .h = 3, .l = 50, .s = 131, .e = 128}, kF16);
  check({.b = 2, .h = 1, .l = 257, .s = 65, .e = 64, .scale = 0.3}, kBF16);
  // The fused route was taken (it registers its user op on first use).
  EXPECT_NO_THROW(find_user_op("cuda.attention_forward"));
}

TEST(CudaAttention, FusedMatchesTheHostCausalCrossLengthsAndSmallHeads) {
  EMBER_REQUIRE_GPU();
  manual_seed(2);
  // Top-left causal alignment: queries past S see every key; keys past L get no gradient.
  check({.b = 1, .h = 2, .l = 150, .s = 70, .e = 64, .causal = true}, kBF16);
  check({.b = 1, .h = 2, .l = 40, .s = 150, .e = 64, .causal = true}, kBF16);
  check({.b = 2, .h = 2, .l = 33, .s = 33, .e = 32, .causal = true}, kF16);
  check({.b = 1, .h = 2, .l = 96, .s = 96, .e = 80, .causal = true}, kBF16);
}

TEST(CudaAttention, FusedMatchesTheHostMasked) {
  EMBER_REQUIRE_GPU();
  manual_seed(3);
  check({.b = 2, .h = 2, .l = 99, .s = 141, .e = 64, .mask = 1}, kBF16);
  check({.b = 2, .h = 3, .l = 70, .s = 70, .e = 64, .mask = 2}, kF16);
  check({.b = 1, .h = 2, .l = 65, .s = 129, .e = 128, .mask = 2}, kBF16);
}

TEST(CudaAttention, CallsTheFusedKernelsDoNotServeRunTheDecomposition) {
  EMBER_REQUIRE_GPU();
  manual_seed(4);
  Tensor q = randn({2, 2, 40, 16}), k = randn({2, 2, 40, 16}), v = randn({2, 2, 40, 16});
  const Device d = Device::cuda(0);
  Tensor want = F::scaled_dot_product_attention(q, k, v, {.is_causal = true});
  EXPECT_LT(rel_error(F::scaled_dot_product_attention(q.to(d), k.to(d), v.to(d),
                                                      {.is_causal = true}),
                      want),
            1e-5);
  // Dropout keeps the decomposition (its mask is drawn like the host's): p close to 0 changes
  // nearly nothing.
  Tensor y = F::scaled_dot_product_attention(q.to(d).to(kBF16), k.to(d).to(kBF16),
                                             v.to(d).to(kBF16),
                                             {.dropout_p = 1e-9, .is_causal = true});
  EXPECT_LT(rel_error(y, want), 2e-2);
}

}  // namespace
}  // namespace ember

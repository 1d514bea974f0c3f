// The flex int4 GEMV on every instruction set this CPU runs (AVX2 where it has it, else the
// portable loops), against the dequantized product in f64: decoder shapes with groups of 32 and
// 128 (the AVX2 kernel's), 16 (its smallest) and 6 (portable loops only), channel counts that
// leave a partial block, and the few-row batches below the GEMM's threshold; the GEMM path's
// panel unpacking too (rows past the threshold, depth blocks that start inside a group).
#include <gtest/gtest.h>

#include "ember/backends/flex/gemm_kernel.h"
#include "ember/ember.h"

namespace ember {
namespace {

using flex::GemmIsa;

struct IsaGuard {
  GemmIsa old = flex::gemm_isa();
  ~IsaGuard() { flex::set_gemm_isa(old); }
};

TEST(QuantKernels, Int4ProductsOnEveryInstructionSet) {
  NoGradGuard ng;
  DeviceGuard on(Device::flex());
  IsaGuard guard;
  manual_seed(11);
  struct Shape3 {
    int64_t m, n, k, group;
  };
  const Shape3 shapes[] = {{1, 37, 256, 32}, {3, 9, 512, 128}, {1, 130, 64, 16},
                           {2, 7, 48, 6},    {1, 5, 32, 32},   {12, 21, 320, 32}};
  for (GemmIsa isa : {GemmIsa::Baseline, GemmIsa::Avx2, GemmIsa::Avx512}) {
    if (!flex::set_gemm_isa(isa)) continue;
    for (const auto& s : shapes) {
      SCOPED_TRACE(std::string(flex::gemm_isa_name(isa)) + " m " + std::to_string(s.m) + " n " +
                   std::to_string(s.n) + " k " + std::to_string(s.k) + " group " +
                   std::to_string(s.group));
      const Tensor w = randn({s.n, s.k}), x = randn({s.m, s.k}), b = randn({s.n});
      const QuantizedInt4 q = quantize_int4(w, s.group);
      const Tensor want = linear(x.to(kF64), dequantize(q).to(kF64), b.to(kF64));
      EXPECT_TRUE(allclose(linear(x, q, b).to(kF64), want, 1e-4, 1e-4));
      EXPECT_TRUE(allclose(linear(x, q).to(kF64), want - b.to(kF64), 1e-4, 1e-4));
    }
  }
}

}  // namespace
}  // namespace ember

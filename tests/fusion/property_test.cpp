// Fused equals eager on generated programs: a seeded generator draws chains of the fusable ops
// (elementwise maths, comparisons, selects, casts, reductions and normalisations) over tensors
// of several dtypes, broadcast shapes and non-contiguous views, runs each program on the lazy
// Device::cpu() (fused kernels) and on Device::cpu().eager() (one kernel per op), and compares:
// bitwise for elementwise results (a fused kernel rounds where the eager kernels do), within a
// stated tolerance for reductions (which add in another order).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "ember/ember.h"
#include "ember/fusion.h"
#include "fusion/programs.h"

namespace ember {
namespace {

using namespace fusion_test;  // NOLINT: the generator is this test's vocabulary

struct WaitForKernels {
  WaitForKernels() { fusion::set_wait_for_kernels(true); }
  ~WaitForKernels() { fusion::set_wait_for_kernels(false); }
};

void check(uint32_t first, uint32_t count, bool smooth) {
  WaitForKernels wait;
  int64_t fused = 0;
  for (uint32_t seed = first; seed < first + count; ++seed) {
    std::string text;
    fusion::reset_stats();
    const std::vector<Tensor> lazy = run(seed, Device::cpu(), smooth, &text);
    synchronize(Device::cpu());
    fused += fusion::stats().fused_kernels;
    const std::vector<Tensor> eager = run(seed, Device::cpu().eager(), smooth, nullptr);
    ASSERT_EQ(lazy.size(), eager.size());
    for (size_t i = 0; i < lazy.size(); ++i) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", value " + std::to_string(i) + ":" + text);
      if (!smooth) EXPECT_TRUE(same(lazy[i], eager[i])) << lazy[i] << "\n" << eager[i];
      else EXPECT_TRUE(close(lazy[i], eager[i], 1e-4)) << lazy[i] << "\n" << eager[i];
    }
  }
  EXPECT_GT(fused, int64_t(count) / 2);  // the programs did fuse
}

// Exact and step ops (arithmetic, min/max, sqrt, floor, comparisons, selects, casts): bitwise.
TEST(FusionProperty, ExactProgramsAreBitwiseEqualToEager) { check(1, 120, false); }
// Transcendental ops and reductions (another summation order): within 1e-4 relative.
TEST(FusionProperty, SmoothProgramsWithReductionsMatchEager) { check(1000, 120, true); }

}  // namespace
}  // namespace ember

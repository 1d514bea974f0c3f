// The kernel language's scalar maths: accuracy of ember's own implementations over wide ranges.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ember/kl/scalar.h"

namespace {

int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = int32_t(0x80000000u - uint32_t(ia));
  if (ib < 0) ib = int32_t(0x80000000u - uint32_t(ib));
  return std::llabs(int64_t(ia) - int64_t(ib));
}

TEST(KlMath, ExpFloatIsWithinTwoUlpEverywhere) {
  int64_t worst = 0;
  for (float x = -103.0f; x < 88.7f; x += 0.0037f) {
    float want = float(std::exp(double(x)));
    worst = std::max(worst, ulp_distance(ember::kl::exp(x), want));
  }
  EXPECT_LE(worst, 2);
  EXPECT_EQ(ember::kl::exp(0.0f), 1.0f);
  EXPECT_TRUE(std::isinf(ember::kl::exp(89.0f)));
  EXPECT_TRUE(std::isinf(ember::kl::exp(INFINITY)));
  EXPECT_EQ(ember::kl::exp(-INFINITY), 0.0f);
  EXPECT_EQ(ember::kl::exp(-200.0f), 0.0f);
  EXPECT_TRUE(std::isnan(ember::kl::exp(NAN)));
}

TEST(KlMath, TanhFloatIsWithinTwoUlpEverywhere) {
  int64_t worst = 0;
  // Every 997th float from the smallest subnormal to the largest finite one, both signs: small
  // arguments (the polynomial), the switch at 0.625, saturation.
  for (uint32_t bits = 1; bits < 0x7f800000u; bits += 997) {
    float x;
    std::memcpy(&x, &bits, 4);
    for (float s : {x, -x})
      worst = std::max(worst, ulp_distance(ember::kl::tanh(s), float(std::tanh(double(s)))));
  }
  EXPECT_LE(worst, 2);
  EXPECT_EQ(ember::kl::tanh(INFINITY), 1.0f);
  EXPECT_EQ(ember::kl::tanh(-INFINITY), -1.0f);
  EXPECT_TRUE(std::signbit(ember::kl::tanh(-0.0f)));
  EXPECT_TRUE(std::isnan(ember::kl::tanh(NAN)));
}

TEST(KlMath, ErfinvInvertsErf) {
  for (double y = -0.999; y < 1; y += 0.0137) EXPECT_NEAR(std::erf(ember::kl::erfinv(y)), y, 1e-12);
  EXPECT_TRUE(std::isinf(ember::kl::erfinv(1.0)));
  EXPECT_TRUE(std::isnan(ember::kl::erfinv(1.5f)));
}

}  // namespace

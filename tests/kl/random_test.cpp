// kl's Philox4x32-10 (ember/kl/random.h), rendered to C++ and run: the words and the bernoulli
// draws of ember/detail/philox.h bit for bit, for indices past 2^32 and seeds and offsets that
// use all 64 bits, in the vector loop and its scalar tail.
#include "ember/kl/random.h"

#include <gtest/gtest.h>

#include "ember/detail/philox.h"
#include "harness.h"

namespace ember::kl::test {
namespace {

TEST(KlRandom, PhiloxMatchesTheHostGenerator) {
  const uint64_t seed = 0x0123456789ABCDEFull, offset = 0xFEDCBA9876543210ull;
  const double p = 0.3;
  const int64_t n = 1027, base = (int64_t(1) << 32) - 500;  // the counter's high word changes
  const Tensor idx = arange(n, {.dtype = kI64}) + base;
  auto body = [](std::span<const Expr> in, std::span<const Expr> sc) {
    const std::array<Expr, 4> r = philox4x32(sc[0], sc[1], in[0]);
    return std::vector<Expr>{r[0], r[1], r[2], r[3],
                             cast(bernoulli_keep(sc[0], sc[1], in[0], sc[2]), kU8)};
  };
  const std::vector<Tensor> got = run_pointwise(
      {idx}, {kI64, kI64, kI64, kI64, kU8}, {n}, body,
      {Scalar(int64_t(seed)), Scalar(int64_t(offset)), Scalar(p)}, {kI64, kI64, kF64});
  ASSERT_EQ(got.size(), 5u);
  std::vector<std::vector<int64_t>> words;
  for (int k = 0; k < 4; ++k) words.push_back(got[size_t(k)].to_vector<int64_t>());
  const std::vector<uint8_t> keep = got[4].to_vector<uint8_t>();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto w = detail::philox_at(seed, offset, uint64_t(base + i));
    for (int k = 0; k < 4; ++k)
      ASSERT_EQ(words[size_t(k)][size_t(i)], int64_t(w[size_t(k)])) << "word " << k << " at " << i;
    ASSERT_EQ(keep[size_t(i)], detail::u01d(w[0], w[1]) < p ? 1 : 0) << "draw at " << i;
    kept += keep[size_t(i)];
  }
  EXPECT_NEAR(double(kept) / double(n), p, 0.05);
}

}  // namespace
}  // namespace ember::kl::test

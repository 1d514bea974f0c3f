// The pointwise template, rendered to C++, compiled and run against flex's eager results.
#include <gtest/gtest.h>

#include "ember/kl/trace_op.h"
#include "harness.h"

namespace ember::kl::test {
namespace {

// relu(x * 2 + 1) * x through the elementwise table, the scalars 2 and 1 as parameters.
std::vector<Expr> relu_chain(std::span<const Expr> in, std::span<const Expr> s) {
  const DType d = in[0].dtype(), c = eval_dtype(d);
  auto op2 = [&](OpId op, const Expr& a, const Expr& b) {
    Expr ab[] = {a, b};
    return pointwise(op, {}, ab, {}, d, d);
  };
  Expr t = op2(OpId::mul, in[0], cast(s[0], d));
  t = op2(OpId::add, t, cast(s[1], d));
  Expr r[] = {t};
  t = pointwise(OpId::relu, {}, r, {}, d, d);
  (void)c;
  return {op2(OpId::mul, t, in[0])};
}

TEST(KlPointwise, ReluChainMatchesFlexBitwise) {
  manual_seed(1);
  Batch batch;
  std::vector<std::pair<JobPtr, Tensor>> checks;
  for (DType d : {kF32, kF64, kF16, kBF16}) {
    for (int64_t n : {1, 7, 8, 9, 100, 4099}) {
      Tensor x = randn({n}).to(d);
      checks.push_back({pointwise_job(batch, {x}, {d}, {n}, relu_chain, {2.0, 1.0}, {d, d}), relu(x * 2 + 1) * x});
    }
  }
  batch.run();
  for (auto& [job, want] : checks) EXPECT_EQ(diff_exact(job->outputs[0], want), "") << job->key;
}

TEST(KlPointwise, BroadcastsAndStridesAndPieces) {
  manual_seed(2);
  Tensor a = randn({5, 1, 7});
  Tensor b = randn({3, 1});
  Tensor c = randn({7, 3}).t();  // non-contiguous [3, 7]
  Shape shape{5, 3, 7};
  // Through the table: each op rounds (a fence), so mul + add is not contracted into an FMA
  // and the result is eager's, bit for bit.
  auto body = [](std::span<const Expr> in, std::span<const Expr>) {
    auto op2 = [](OpId op, const Expr& x, const Expr& y) {
      Expr xy[] = {x, y};
      return pointwise(op, {}, xy, {}, kF32, kF32);
    };
    return std::vector<Expr>{op2(OpId::add, op2(OpId::mul, in[0], in[1]), in[2]), op2(OpId::sub, in[0], in[2])};
  };
  for (int64_t piece : {0, 1, 5, 13}) {
    std::string key;
    auto got = run_pointwise({a, b, c}, {kF32, kF32}, shape, body, {}, {}, {}, piece, &key);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(diff_exact(got[0], a * b + c), "") << key << " piece " << piece;
    EXPECT_EQ(diff_exact(got[1], expand(a - c, shape).contiguous()), "") << key;
  }
}

TEST(KlPointwise, NonContiguousOutputAndIntegers) {
  manual_seed(3);
  Tensor x = randint(-100, 100, {4, 6}).to(kI32);
  Tensor y = randint(-100, 100, {6}).to(kI32);
  Tensor out_base = zeros({6, 4}, {.dtype = kI32});
  Tensor out = out_base.t();  // [4, 6] with strides (1, 4)
  auto body = [](std::span<const Expr> in, std::span<const Expr>) {
    Expr ab[] = {in[0], in[1]};
    return std::vector<Expr>{pointwise(OpId::mul, {}, ab, {}, kI32, kI32)};
  };
  run_pointwise({x, y}, {kI32}, {4, 6}, body, {}, {}, {out});
  EXPECT_EQ(diff_exact(out, x * y), "");
}

}  // namespace
}  // namespace ember::kl::test

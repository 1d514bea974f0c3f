// VJP rules of reductions, scans and sorting beyond the golden cases: zeros in prod/cumprod, ties
// and NaN (where finite differences are no reference, so the expected gradients are torch 1.13's),
// norm's subgradients, dtype arguments, non-contiguous inputs and cotangents.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ember/backends/backend.h"
#include "ember/ember.h"
#include "gradcheck.h"

namespace ember::test {
namespace {

using Call = std::function<void(const Tensor&)>;
const double kNaN = std::nan("");
const double kInf = INFINITY;

Tensor f64(std::vector<double> v, Shape s) { return tensor(v, s); }
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// gradcheck of `op` as `call` runs it on x (attrs captured from the public API).
std::string check(OpId op, const Tensor& x, const Call& call, const GradcheckOptions& o = {}) {
  CapturedCall c = capture_op(op, [&](Device dev) { call(x.to(dev)); });
  EXPECT_TRUE(c.captured);
  return gradcheck(op, c.attrs, c.inputs, o);
}

// The rule's gradient for x, with `cot` as the first output's cotangent (ones when undefined)
// and no cotangent for the others.
Tensor rule_grad(OpId op, const Tensor& x, const Call& call, Tensor cot = {}) {
  CapturedCall c = capture_op(op, [&](Device dev) { call(x.to(dev)); });
  TensorList outs = dispatch(op, c.attrs, std::span<const Tensor>(c.inputs));
  TensorList cots(outs.size());
  cots[0] = cot.defined() ? cot : ones_like(outs[0]);
  const bool needs = true;
  VjpCtx ctx{op, c.attrs, c.inputs, outs, cots, std::span<const bool>(&needs, 1)};
  return op_def(op).vjp(ctx)[0];
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  auto got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    else EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
  }
}

TEST(ReduceRules, IndexAndLogicalReductionsAreNotDifferentiable) {
  detail::init();
  for (OpId op : {OpId::argmax, OpId::argmin, OpId::argsort, OpId::any, OpId::all,
                  OpId::count_nonzero})
    EXPECT_FALSE(op_def(op).differentiable) << op_name(op);
}

// Rows with one zero, a zero first, two zeros, a zero last; columns with none, one and two.
Tensor with_zeros() {
  return f64({2, 0, 3, 0.5, -1, 0, 1.5, 2, -1, 3, 1, 2, 0, 0, 4, -2, 3, 1, 0.5, 0}, {4, 5});
}

TEST(ReduceRules, ProdWithZerosMatchesFiniteDifferences) {
  // One zero, two zeros, zeros at either end, no zero: the product is a polynomial, so finite
  // differences are exact enough everywhere, zeros included.
  Tensor x = with_zeros();
  EXPECT_EQ(check(OpId::prod, x, [](const Tensor& t) { prod(t, 1); }), "");
  EXPECT_EQ(check(OpId::prod, x, [](const Tensor& t) { prod(t, -2, true); }), "");
  EXPECT_EQ(check(OpId::prod, x.narrow(0, 0, 1), [](const Tensor& t) { prod(t); }), "");
  EXPECT_EQ(check(OpId::prod, x, [](const Tensor& t) { prod(t); }), "");
  // torch: the single zero gets the product of the others; with two zeros everything is 0.
  expect_values(rule_grad(OpId::prod, f64({2, 3, 0, 5}, {4}), [](const Tensor& t) { prod(t); }),
                {0, 0, 30, 0});
  expect_values(rule_grad(OpId::prod, f64({2, 0, 3, 0, 5}, {5}), [](const Tensor& t) { prod(t); }),
                {0, 0, 0, 0, 0});
}

TEST(ReduceRules, CumprodWithZerosMatchesFiniteDifferences) {
  Tensor x = with_zeros();
  EXPECT_EQ(check(OpId::cumprod, x, [](const Tensor& t) { cumprod(t, 1); }), "");
  EXPECT_EQ(check(OpId::cumprod, x, [](const Tensor& t) { cumprod(t, 0); }), "");
  EXPECT_EQ(check(OpId::cumprod, x.t(), [](const Tensor& t) { cumprod(t, 0); }), "");
  // torch: cotangent [1..5] on cumprod([2, 0, 3, 0, 5]) gives [1, 22, 0, 0, 0].
  expect_values(rule_grad(OpId::cumprod, f64({2, 0, 3, 0, 5}, {5}),
                          [](const Tensor& t) { cumprod(t, 0); }, f64({1, 2, 3, 4, 5}, {5})),
                {1, 22, 0, 0, 0});
}

TEST(ReduceRules, DtypeArgumentsGiveGradientsInTheInputDtype) {
  Tensor x = randn({2, 3});
  Tensor g = rule_grad(OpId::sum, x, [](const Tensor& t) { sum(t, {1}, false, DType::F64); });
  EXPECT_EQ(g.dtype(), DType::F32);
  EXPECT_EQ(g.shape(), x.shape());
  expect_values(g, std::vector<double>(6, 1.0));
  Tensor m = rule_grad(OpId::mean, x, [](const Tensor& t) { mean(t, {}, true, DType::F64); });
  EXPECT_EQ(m.dtype(), DType::F32);
  expect_values(m, std::vector<double>(6, 1.0 / 6));
  for (OpId op : {OpId::cumsum, OpId::cumprod}) {
    Tensor c = rule_grad(op, x, [op](const Tensor& t) {
      op == OpId::cumsum ? cumsum(t, 1, DType::F64) : cumprod(t, 1, DType::F64);
    });
    EXPECT_EQ(c.dtype(), DType::F32) << op_name(op);
  }
  Tensor p = rule_grad(OpId::prod, x, [](const Tensor& t) { prod(t, 0, false, DType::F64); });
  EXPECT_EQ(p.dtype(), DType::F32);
  // An integer input gets no gradient even when it is summed into a float.
  Tensor i = tensor({1, 2, 3});
  EXPECT_FALSE(rule_grad(OpId::sum, i, [](const Tensor& t) { sum(t, {}, false, DType::F32); })
                   .defined());
}

TEST(ReduceRules, TiesFollowTorch) {
  Tensor x = f64({1, 3, 3, 2, 3}, {5});
  const std::vector<double> third = {0, 1. / 3, 1. / 3, 0, 1. / 3};
  // Whole-tensor max/min/median and amax/amin split the cotangent evenly among the ties...
  expect_values(rule_grad(OpId::max, x, [](const Tensor& t) { max(t); }), third);
  expect_values(rule_grad(OpId::amax, x, [](const Tensor& t) { amax(t); }), third);
  expect_values(rule_grad(OpId::min, -x, [](const Tensor& t) { min(t); }), third);
  expect_values(rule_grad(OpId::amin, -x, [](const Tensor& t) { amin(t, {0}, true); }), third);
  expect_values(rule_grad(OpId::median, f64({1, 2, 2, 1, 2}, {5}),
                          [](const Tensor& t) { median(t); }),
                third);
  expect_values(rule_grad(OpId::norm, x, [](const Tensor& t) { norm(t, INFINITY); }), third);
  // ...the dim forms pass it to the index they return (the first of the ties).
  expect_values(rule_grad(OpId::max, x, [](const Tensor& t) { max(t, 0); }), {0, 1, 0, 0, 0});
  // cummax: the index moves to the latest tie and a selected element collects every output it
  // feeds (torch: [1, 5, 0, 9, 0] for cotangent [1..5]).
  expect_values(rule_grad(OpId::cummax, f64({1, 3, 2, 3, 0}, {5}),
                          [](const Tensor& t) { cummax(t, 0); }, f64({1, 2, 3, 4, 5}, {5})),
                {1, 5, 0, 9, 0});
}

TEST(ReduceRules, NaNFollowsTorch) {
  // The whole-tensor max gives NaN's gradient to the NaNs; the dim form to its index.
  Tensor x = f64({1, kNaN, 3, kNaN}, {4});
  expect_values(rule_grad(OpId::max, x, [](const Tensor& t) { max(t); }), {0, 0.5, 0, 0.5});
  expect_values(rule_grad(OpId::median, x, [](const Tensor& t) { median(t); }), {0, 0.5, 0, 0.5});
  expect_values(rule_grad(OpId::min, x, [](const Tensor& t) { min(t, 0); }), {0, 1, 0, 0});
  // amax: a lane whose result is NaN has no element equal to it, and torch gives it NaN.
  Tensor y = f64({1, kNaN, 2, /**/ 1, 2, 3}, {2, 3});
  expect_values(rule_grad(OpId::amax, y, [](const Tensor& t) { amax(t, {1}); }),
                {kNaN, kNaN, kNaN, 0, 0, 1});
  // inf-norm: the NaN is the selected element, but sign(NaN) = 0.
  expect_values(rule_grad(OpId::norm, y, [](const Tensor& t) { norm(t, INFINITY, {1}); }),
                {0, 0, 0, 0, 0, 1});
  expect_values(rule_grad(OpId::norm, y, [](const Tensor& t) { norm(t, 2, {1}); }),
                {kNaN, kNaN, kNaN, 1 / std::sqrt(14.), 2 / std::sqrt(14.), 3 / std::sqrt(14.)});
}

TEST(ReduceRules, NormSubgradientsAtZero) {
  Tensor zero = zeros({3}, {DType::F64});
  Tensor x = f64({0, 1, -2, 0}, {4});
  for (double p : {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -1.0, kInf, -kInf}) {
    SCOPED_TRACE("p = " + std::to_string(p));
    expect_values(rule_grad(OpId::norm, zero, [p](const Tensor& t) { norm(t, p); }), {0, 0, 0});
    // d/dx ||x||_p = sign(x) |x|^(p-1) ||x||_p^(1-p), 0 at x = 0 (torch's subgradient). The
    // zeros make a negative-p norm (and its gradient) 0.
    const double n = p == kInf ? 2 : p <= 0 ? 0 : std::pow(1 + std::pow(2, p), 1 / p);
    auto d = [&](double v) {
      if (v == 0 || p == 0) return 0.0;
      if (std::isinf(p)) return std::fabs(v) == n ? (v > 0 ? 1.0 : -1.0) : 0.0;
      return (v > 0 ? 1 : -1) * std::pow(std::fabs(v), p - 1) * std::pow(n, 1 - p);
    };
    expect_values(rule_grad(OpId::norm, x, [p](const Tensor& t) { norm(t, p); }),
                  {0, d(1), d(-2), 0});
  }
}

TEST(ReduceRules, StdOfAConstantLaneIsZero) {
  Tensor x = f64({1, 1, 1, /**/ 1, 2, 4}, {2, 3});
  Tensor g = rule_grad(OpId::std, x, [](const Tensor& t) { ember::std(t, {1}); });
  auto v = values(g);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(v[i], 0.0);
  EXPECT_EQ(check(OpId::std, x.narrow(0, 1, 1), [](const Tensor& t) { ember::std(t, {1}); }), "");
}

TEST(ReduceRules, EmptySelectionsGiveZeros) {
  Tensor x = randn({3, 6}, {DType::F64});
  Tensor g = rule_grad(OpId::topk, x, [](const Tensor& t) { topk(t, 0, 1); });
  EXPECT_EQ(g.shape(), x.shape());
  expect_values(g, std::vector<double>(18, 0.0));
}

// Each op on a transposed (non-contiguous) input with a non-contiguous cotangent matches the
// same op on a contiguous copy.
TEST(ReduceRules, NonContiguousInputsAndCotangents) {
  manual_seed(7);
  Tensor base = randn({5, 4}, {DType::F64});
  Tensor xt = base.t();  // [4, 5], strides [1, 4]
  struct Op {
    OpId op;
    Call call;
  };
  std::vector<Op> ops = {
      {OpId::sum, [](const Tensor& t) { sum(t, {0}, true); }},
      {OpId::mean, [](const Tensor& t) { mean(t, {-1}, true); }},
      {OpId::prod, [](const Tensor& t) { prod(t, 1, true); }},
      {OpId::var, [](const Tensor& t) { var(t, {1}, 1, true); }},
      {OpId::std, [](const Tensor& t) { ember::std(t, {0}, 0, true); }},
      {OpId::logsumexp, [](const Tensor& t) { logsumexp(t, {1}, true); }},
      {OpId::norm, [](const Tensor& t) { norm(t, 3, {1}, true); }},
      {OpId::amax, [](const Tensor& t) { amax(t, {1}, true); }},
      {OpId::max, [](const Tensor& t) { max(t, 1, true); }},
      {OpId::kthvalue, [](const Tensor& t) { kthvalue(t, 2, 1, true); }},
      {OpId::median, [](const Tensor& t) { median(t, 1, true); }},
      {OpId::cumsum, [](const Tensor& t) { cumsum(t, 1); }},
      {OpId::cumprod, [](const Tensor& t) { cumprod(t, 1); }},
      {OpId::cummin, [](const Tensor& t) { cummin(t, 1); }},
      {OpId::sort, [](const Tensor& t) { sort(t, 1, true); }},
      {OpId::topk, [](const Tensor& t) { topk(t, 3, 1); }},
  };
  for (const Op& o : ops) {
    SCOPED_TRACE(op_name(o.op));
    CapturedCall c = capture_op(o.op, [&](Device dev) { o.call(xt.to(dev)); });
    Shape out_shape = dispatch(o.op, c.attrs, std::span<const Tensor>(c.inputs))[0].shape();
    // A strided cotangent: every other element of a tensor twice as long in a dim of size > 1.
    const int64_t d = out_shape[0] > 1 ? 0 : 1;
    Shape wide = out_shape;
    wide[size_t(d)] *= 2;
    Tensor cot = randn(wide, {DType::F64}).slice(d, 0, std::nullopt, 2);
    ASSERT_FALSE(cot.is_contiguous());
    Tensor strided = rule_grad(o.op, xt, o.call, cot);
    Tensor dense = rule_grad(o.op, xt.contiguous(), o.call, cot.contiguous());
    EXPECT_TRUE(allclose(strided, dense, 1e-12, 1e-12));
    EXPECT_EQ(check(o.op, xt, o.call), "");
  }
}

}  // namespace
}  // namespace ember::test

// Elementwise VJP rules beyond the golden cases: broadcasting on every operand, type promotion
// and wrapped Scalar operands, non-contiguous inputs, kinks and special values (torch's values),
// copy into a destination, and casts checked with a step their rounding allows.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ops/modes.h"
#include "elementwise_helpers.h"
#include "gradcheck.h"

namespace ember::test {
namespace {

Tensor uni(const Shape& s, double lo, double hi, DType d = DType::F64) {
  return uniform(lo, hi, s, {d});
}
Tensor f64(std::vector<double> v) { return tensor(v, {int64_t(v.size())}); }
template <class T> Tensor int_tensor(std::vector<T> v) { return tensor(v, {int64_t(v.size())}); }
std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

void expect_near(const Tensor& got, const Tensor& want, double tol = 1e-12) {
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(got.shape(), want.shape());
  auto g = vals(got), w = vals(want);
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], w[i], tol * std::max(1.0, std::fabs(w[i]))) << "element " << i;
}

Attrs with_value(double v) {
  Attrs a;
  a.s[0] = v;
  return a;
}

TEST(ElementwiseRules, BinaryOpsBroadcastBothOperands) {
  manual_seed(7);
  for (OpId op : {OpId::add, OpId::sub, OpId::mul, OpId::div, OpId::remainder, OpId::fmod,
                  OpId::pow, OpId::atan2, OpId::maximum, OpId::minimum}) {
    SCOPED_TRACE(op_name(op));
    // Positive operands keep pow real; remainder/fmod jumps are measure-zero for random data.
    EXPECT_EQ(gradcheck(op, {}, {uni({3, 1}, 0.5, 3), uni({1, 4}, 0.4, 2)}), "");
    EXPECT_EQ(gradcheck(op, {}, {uni({4}, 0.5, 3), uni({2, 3, 4}, 0.4, 2)}), "");
    EXPECT_EQ(gradcheck(op, {}, {uni({2, 3}, 0.5, 3), uni({}, 0.4, 2)}), "");
  }
}

TEST(ElementwiseRules, TernaryOpsBroadcastEveryOperand) {
  manual_seed(8);
  Tensor cond = uni({3, 1}, 0, 1) > 0.5;
  EXPECT_EQ(gradcheck(OpId::where, {}, {cond, uni({1, 4}, -1, 1), uni({3, 4}, -1, 1)}), "");
  Tensor x = uni({3, 4}, -2, 2), lo = uni({1, 4}, -1, -0.2), hi = uni({3, 1}, 0.2, 1);
  EXPECT_EQ(gradcheck(OpId::clamp, {}, {x, lo, hi}), "");
  EXPECT_EQ(gradcheck(OpId::clamp, {}, {x, lo, Tensor()}), "");
  EXPECT_EQ(gradcheck(OpId::clamp, {}, {x, Tensor(), hi}), "");
  EXPECT_EQ(gradcheck(OpId::clamp, {}, {x, hi, lo}), "");  // lo > hi: the output is hi
  EXPECT_EQ(gradcheck(OpId::lerp, {}, {uni({3, 1}, -1, 1), uni({1, 4}, -1, 1), uni({3, 4}, 0, 1)}),
            "");
  for (OpId op : {OpId::addcmul, OpId::addcdiv}) {
    SCOPED_TRACE(op_name(op));
    EXPECT_EQ(gradcheck(op, with_value(-0.7),
                        {uni({3, 1}, -1, 1), uni({1, 4}, -1, 1), uni({3, 4}, 0.5, 2)}), "");
  }
}

TEST(ElementwiseRules, PowFollowsTorchAtZeroAndOnPositiveBases) {
  manual_seed(9);
  EXPECT_EQ(gradcheck(OpId::pow, {}, {uni({2, 3}, 0.3, 2), uni({2, 3}, -1.5, 2.5)}), "");
  // d/da = 0 where b == 0 (even at a == 0); d/db = 0 where a == 0 and b >= 0.
  TensorList g = call_rule(OpId::pow, {}, {f64({0, 0, 2, 0}), f64({2, 0, 0, -1})});
  auto ga = vals(g[0]), gb = vals(g[1]);
  EXPECT_EQ(ga, (std::vector<double>{0, 0, 0, -INFINITY}));
  EXPECT_EQ(gb[0], 0);
  EXPECT_EQ(gb[1], 0);
  EXPECT_NEAR(gb[2], std::log(2.0), 1e-15);
  EXPECT_EQ(gb[3], -INFINITY);  // 0^-1 log 0, as torch computes it
}

TEST(ElementwiseRules, DivisionWithRoundingHasZeroGradients) {
  for (const char* mode : {"floor", "trunc"}) {
    Attrs a;
    a.mode = uint8_t(ops::parse_rounding_mode("div", mode));
    TensorList g = call_rule(OpId::div, a, {uni({2, 3}, 1, 2, DType::F32), uni({}, 1, 2)});
    ASSERT_TRUE(g[0].defined() && g[1].defined());
    EXPECT_EQ(g[0].dtype(), DType::F32);
    EXPECT_EQ(g[1].dtype(), DType::F64);
    EXPECT_EQ(g[1].shape(), Shape{});
    EXPECT_EQ(vals(g[0]), std::vector<double>(6, 0.0));
    EXPECT_EQ(g[1].item<double>(), 0.0);
  }
}

TEST(ElementwiseRules, GradientsTakeEachInputsDtypeAndShape) {
  manual_seed(10);
  // f32 tensor times an f64 0-d tensor: the result is f32, the 0-d operand's gradient f64.
  Tensor x = uni({2, 3}, -1, 1, DType::F32), s = scalar_tensor(0.25, DType::F64);
  Tensor g = uni({2, 3}, -1, 1, DType::F32);
  TensorList r = call_rule(OpId::mul, {}, {x, s}, g);
  EXPECT_EQ(r[0].dtype(), DType::F32);
  expect_near(r[0], g * 0.25, 1e-7);
  EXPECT_EQ(r[1].dtype(), DType::F64);
  EXPECT_EQ(r[1].shape(), Shape{});
  EXPECT_NEAR(r[1].item<double>(), sum(mul(x.to(DType::F64), g.to(DType::F64))).item<double>(),
              1e-5);
  // f16 and f32 operands: each gradient in its own dtype, the broadcast one summed.
  Tensor h = uni({2, 3}, -1, 1, DType::F16), w = uni({3}, -1, 1, DType::F32);
  r = call_rule(OpId::mul, {}, {h, w});
  EXPECT_EQ(r[0].dtype(), DType::F16);
  EXPECT_EQ(r[1].dtype(), DType::F32);
  expect_near(r[1], sum(h.to(DType::F32), {0}), 1e-6);
  // Integer operands of a float result get none.
  for (OpId op : {OpId::mul, OpId::div, OpId::pow, OpId::atan2, OpId::maximum}) {
    SCOPED_TRACE(op_name(op));
    r = call_rule(op, {}, {int_tensor<int32_t>({1, 2, 3}), uni({2, 3}, 0.5, 1, DType::F32)});
    EXPECT_FALSE(r[0].defined());
    ASSERT_TRUE(r[1].defined());
    EXPECT_EQ(r[1].shape(), Shape({2, 3}));
  }
  r = call_rule(OpId::exp, {}, {int_tensor<int32_t>({1, 2})});
  EXPECT_FALSE(r[0].defined());
  r = call_rule(OpId::where, {}, {f64({1, 0}) > 0.5, int_tensor<int64_t>({1, 2}), f64({3, 4})});
  EXPECT_FALSE(r[0].defined() || r[1].defined());
  expect_near(r[2], f64({0, 1}));
}

// Wrapped Scalar operands, as the public API builds them (captured from the real calls).
TEST(ElementwiseRules, WrappedScalarOperandsKeepTheTensorsPrecision) {
  auto rule_of = [](OpId op, const std::function<void(Device)>& fn, bool force = false) {
    CapturedCall c = capture_op(op, fn);
    EXPECT_TRUE(c.captured);
    return call_rule(op, c.attrs, c.inputs, {}, force);
  };
  Tensor x = f64({0.3, 1.7, 2.9});
  auto ex = vals(x);
  TensorList r = rule_of(OpId::mul, [&](Device d) { mul(x.to(d), 2.5); });
  expect_near(r[0], f64({2.5, 2.5, 2.5}), 0);
  EXPECT_FALSE(r[1].defined());  // a wrapped number never asks for a gradient
  // ... but a rule asked anyway must still answer with the operand's shape and dtype.
  r = rule_of(OpId::mul, [&](Device d) { mul(x.to(d), 2.5); }, true);
  EXPECT_EQ(r[1].shape(), Shape{});
  EXPECT_NEAR(r[1].item<double>(), 4.9, 1e-14);

  // Exponents and weights stay f64 (ops between two wrapped numbers would round to f32).
  r = rule_of(OpId::pow, [&](Device d) { pow(x.to(d), 2.3); });
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(vals(r[0])[i], 2.3 * std::pow(ex[i], 1.3), 1e-14);
  r = rule_of(OpId::pow, [&](Device d) { pow(2.1, x.to(d)); });
  EXPECT_FALSE(r[0].defined());
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(vals(r[1])[i], std::pow(2.1, ex[i]) * std::log(2.1), 1e-14);
  r = rule_of(OpId::lerp, [&](Device d) { lerp(x.to(d), f64({1, 2, 3}).to(d), 0.3); });
  expect_near(r[0], f64({0.7, 0.7, 0.7}), 1e-15);
  expect_near(r[1], f64({0.3, 0.3, 0.3}), 1e-15);
  EXPECT_FALSE(r[2].defined());
  r = rule_of(OpId::atan2, [&](Device d) { atan2(x.to(d), 0.3); });
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(vals(r[0])[i], 0.3 / (ex[i] * ex[i] + 0.09), 1e-15);
  r = rule_of(OpId::clamp, [&](Device d) { clamp(x.to(d), 0.3, 2); });
  expect_near(r[0], f64({1, 1, 0}), 0);  // lo <= x <= hi, inclusive
  r = rule_of(OpId::where, [&](Device d) { where(x.to(d) > 1, x.to(d), 0.5); });
  expect_near(r[1], f64({0, 1, 1}), 0);
  r = rule_of(OpId::div, [&](Device d) { div(1.5, x.to(d)); });
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(vals(r[1])[i], -1.5 / (ex[i] * ex[i]), 1e-14);
  r = rule_of(OpId::remainder, [&](Device d) { remainder(x.to(d), 0.7); });
  expect_near(r[0], f64({1, 1, 1}), 0);
  // An integer tensor operand multiplies g in g's dtype, not in the default dtype.
  r = call_rule(OpId::addcmul, with_value(0.3), {x, x, int_tensor<int64_t>({1, 2, 3})});
  expect_near(r[1], f64({0.3, 0.6, 0.9}), 1e-15);
}

TEST(ElementwiseRules, NonContiguousInputsGiveTheSameGradients) {
  manual_seed(11);
  Tensor a = uni({4, 3}, 0.5, 2).t(), b = uni({4, 3}, 0.5, 2).t();
  Tensor g = uni({4, 3}, -1, 1).t();
  ASSERT_FALSE(a.is_contiguous());
  for (OpId op : {OpId::exp, OpId::log, OpId::gelu, OpId::relu, OpId::contiguous, OpId::copy,
                  OpId::sigmoid, OpId::abs}) {
    SCOPED_TRACE(op_name(op));
    expect_near(call_rule(op, {}, {a}, g)[0], call_rule(op, {}, {a.contiguous()}, g)[0]);
  }
  for (OpId op : {OpId::mul, OpId::div, OpId::pow, OpId::atan2, OpId::maximum}) {
    SCOPED_TRACE(op_name(op));
    TensorList r = call_rule(op, {}, {a, b}, g);
    TensorList c = call_rule(op, {}, {a.contiguous(), b.contiguous()}, g.contiguous());
    expect_near(r[0], c[0]);
    expect_near(r[1], c[1]);
  }
  TensorList r = call_rule(OpId::clamp, {}, {a, b * 0.5, b}, g);
  TensorList c = call_rule(OpId::clamp, {}, {a.contiguous(), (b * 0.5).contiguous(),
                                            b.contiguous()}, g.contiguous());
  for (size_t i = 0; i < 3; ++i) expect_near(r[i], c[i]);
}

TEST(ElementwiseRules, KinksAndSpecialValuesFollowTorch) {
  const double nan = NAN, inf = INFINITY;
  expect_near(call_rule(OpId::abs, {}, {f64({0, -0.0, 2, -2})})[0], f64({0, 0, 1, -1}), 0);
  // relu passes g where the output is not <= 0, so NaN passes it (torch's threshold_backward).
  expect_near(call_rule(OpId::relu, {}, {f64({0, -1, 2})})[0], f64({0, 0, 1}), 0);
  EXPECT_EQ(call_rule(OpId::relu, {}, {f64({nan})})[0].item<double>(), 1.0);
  Attrs slope;
  slope.f[0] = 0.1;
  expect_near(call_rule(OpId::leaky_relu, slope, {f64({0, 1})})[0], f64({0.1, 1}), 1e-15);
  Attrs alpha;
  alpha.f[0] = 0.5;
  expect_near(call_rule(OpId::elu, alpha, {f64({0, 1, 800})})[0], f64({0.5, 1, 1}), 1e-15);
  expect_near(call_rule(OpId::hardswish, {}, {f64({-3, 3, -4, 4})})[0], f64({-0.5, 1.5, 0, 1}));
  expect_near(call_rule(OpId::hardsigmoid, {}, {f64({-3, 3, 0})})[0], f64({0, 0, 1.0 / 6}));
  expect_near(call_rule(OpId::nan_to_num, {}, {f64({inf, -inf, nan, 1})})[0], f64({0, 0, 0, 1}), 0);
  // Ties split evenly; a NaN on either side sends g to both.
  for (OpId op : {OpId::maximum, OpId::minimum}) {
    TensorList r = call_rule(op, {}, {f64({1, nan, 2}), f64({1, 0, nan})});
    expect_near(r[0], f64({0.5, 1, 1}), 0);
    expect_near(r[1], f64({0.5, 1, 1}), 0);
  }
  // A bound equal to x leaves the gradient with x.
  TensorList r = call_rule(OpId::clamp, {}, {f64({0, 1, 2}), f64({0, 0, 0}), f64({1, 1, 1})});
  expect_near(r[0], f64({1, 1, 0}), 0);
  expect_near(r[1], f64({0, 0, 0}), 0);
  expect_near(r[2], f64({0, 0, 1}), 0);
  // softplus is the identity above the threshold.
  Attrs sp;
  sp.f = {2.0, 4.0, 0, 0};
  auto g = vals(call_rule(OpId::softplus, sp, {f64({3, 1})})[0]);
  EXPECT_EQ(g[0], 1.0);
  EXPECT_NEAR(g[1], 1 / (1 + std::exp(-2.0)), 1e-15);
}

TEST(ElementwiseRules, CastAndCopyHandTheGradientBack) {
  manual_seed(12);
  Tensor x = uni({2, 3}, -1, 1, DType::F32), g = uni({2, 3}, -1, 1, DType::F16);
  Attrs to_f16;
  to_f16.dtype = DType::F16;
  to_f16.has_dtype = true;
  TensorList r = call_rule(OpId::cast, to_f16, {x}, g);
  EXPECT_EQ(r[0].dtype(), DType::F32);
  expect_near(r[0], g.to(DType::F32), 0);
  Attrs to_f32 = to_f16;
  to_f32.dtype = DType::F32;
  EXPECT_FALSE(call_rule(OpId::cast, to_f32, {int_tensor<int32_t>({1, 2})})[0].defined());
  // Rounding to f32 is a staircase at the default step; a wider one sees the slope.
  GradcheckOptions wide;
  wide.eps = 1e-3;
  wide.atol = wide.rtol = 1e-3;
  EXPECT_EQ(gradcheck(OpId::cast, to_f32, {uni({2, 3}, -2, 2)}, wide), "");

  // copy_(dst, src): src broadcasts and casts into dst; dst, overwritten, gets nothing.
  Tensor dst = zeros({2, 3}), src = f64({1, 2, 3});
  r = call_rule(OpId::copy, {}, {dst, src}, uni({2, 3}, -1, 1, DType::F32));
  EXPECT_FALSE(r[0].defined());
  ASSERT_TRUE(r[1].defined());
  EXPECT_EQ(r[1].dtype(), DType::F64);
  EXPECT_EQ(r[1].shape(), Shape{3});
  EXPECT_EQ(gradcheck(OpId::copy, {}, {uni({2, 3}, -1, 1)}), "");
  EXPECT_EQ(gradcheck(OpId::contiguous, {}, {uni({2, 3}, -1, 1)}), "");
}

TEST(ElementwiseRules, ActivationAttributesAcrossTheirBranches) {
  manual_seed(13);
  Tensor x = uni({4, 6}, -5, 5);
  Attrs sp;
  sp.f = {2.0, 3.0, 0, 0};
  EXPECT_EQ(gradcheck(OpId::softplus, sp, {x}), "");
  Attrs al;
  al.f[0] = 1.7;
  EXPECT_EQ(gradcheck(OpId::elu, al, {x}), "");
  EXPECT_EQ(gradcheck(OpId::leaky_relu, al, {x}), "");
  for (const char* approx : {"none", "tanh"}) {
    Attrs a;
    a.mode = uint8_t(ops::parse_gelu_approx("gelu", approx));
    EXPECT_EQ(gradcheck(OpId::gelu, a, {x}), "") << approx;
  }
  for (OpId op : {OpId::hardswish, OpId::hardsigmoid, OpId::mish, OpId::silu, OpId::relu})
    EXPECT_EQ(gradcheck(op, {}, {x}), "") << op_name(op);
}

}  // namespace
}  // namespace ember::test

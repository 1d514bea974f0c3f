// VJP rules: elementwise. Unary maths and activations, cast, copy and contiguous live here; binary
// and ternary ops in rules_elementwise_binary.cpp / rules_elementwise_ternary.cpp. Formulas follow
// PyTorch's derivatives.yaml; a rule reuses the forward output where that is cheaper.
#include "ember/autodiff/rules_elementwise.h"

#include <string>

#include "ember/backends/backend.h"
#include "ember/ops/modes.h"

namespace ember::autodiff {

Tensor grad_for(const Tensor& g, const Tensor& x) {
  if (!g.defined() || !x.defined() || !is_floating(x.dtype())) return {};
  Tensor r = sum_to(g, x.shape());
  return r.dtype() == x.dtype() ? r : cast(r, x.dtype());
}

Tensor operand(const VjpCtx& c, size_t i, DType d) {
  const Tensor& t = c.input(i);
  return t.defined() && t.impl()->wrapped_number ? cast(t, d) : t;
}

namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn10 = 2.30258509299404568402;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kSqrtPiOverTwo = 0.88622692545275801365;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;
constexpr double kGeluKappa = 0.044715;

// A one-input rule: f(g, x, y, attrs) is the gradient at the output (y = the forward output).
template <class F>
TensorList unary(const VjpCtx& c, F f) {
  if (!wants(c, 0)) return {Tensor()};
  return {grad_for(f(c.grad(0), c.input(0), c.output(0), c.attrs), c.input(0))};
}

Tensor gelu_grad(const Tensor& g, const Tensor& x, uint8_t approximate) {
  if (approximate == uint8_t(ops::GeluApprox::Tanh)) {  // torch's GeluBackward with approximate='tanh'
    Tensor x2 = x * x;
    Tensor t = tanh((x + x2 * x * kGeluKappa) * kSqrtTwoOverPi);
    Tensor left = (t + 1) * 0.5;
    Tensor right = x * 0.5 * (1 - t * t) * ((x2 * (3 * kGeluKappa) + 1) * kSqrtTwoOverPi);
    return g * (left + right);
  }
  Tensor cdf = (erf(x * kSqrtHalf) + 1) * 0.5;
  Tensor pdf = exp(x * x * -0.5) * kInvSqrt2Pi;
  return g * (cdf + x * pdf);
}

Tensor elu_grad(const Tensor& g, const Tensor& x, double alpha) {
  // alpha * exp(x) on x <= 0; exp only sees that side, so an overflow on the other side cannot
  // turn into 0 * inf = NaN when this rule is itself differentiated.
  Tensor neg_side = x <= 0;
  return where(neg_side, g * exp(where(neg_side, x, 0)) * alpha, g);
}

Tensor silu_grad(const Tensor& g, const Tensor& x) {
  Tensor s = sigmoid(x);
  return g * s * (x * (1 - s) + 1);
}

Tensor mish_grad(const Tensor& g, const Tensor& x) {
  Tensor t = tanh(softplus(x));
  return g * (t + x * sigmoid(x) * (1 - t * t));
}

TensorList vjp_copy(const VjpCtx& c) {
  if (c.inputs.size() == 1) return unary(c, [](auto& g, auto&, auto&, auto&) { return g; });
  // copy_(dst, src): dst is overwritten (no gradient); src was broadcast and cast into it.
  return {Tensor(), wants(c, 1) ? grad_for(c.grad(0), c.input(1)) : Tensor()};
}

}  // namespace

// g, x, y and a (the attrs) are in scope in `expr`.
#define EMBER_VJP1(op, expr)                                                                  \
  set_vjp(OpId::op, [](const VjpCtx& c) {                                                     \
    return unary(c, [](const Tensor& g, const Tensor& x, const Tensor& y, const Attrs& a) {  \
      return expr;                                                                            \
    });                                                                                       \
  })

void register_rules_unary() {
  EMBER_VJP1(cast, g);
  EMBER_VJP1(contiguous, g);
  set_vjp(OpId::copy, vjp_copy);
  EMBER_VJP1(neg, -g);
  EMBER_VJP1(abs, g * sign(x));  // abs'(0) = 0
  EMBER_VJP1(exp, g * y);
  EMBER_VJP1(exp2, g * y * kLn2);
  EMBER_VJP1(expm1, g * (y + 1));
  EMBER_VJP1(log, g / x);
  EMBER_VJP1(log2, g / (x * kLn2));
  EMBER_VJP1(log10, g / (x * kLn10));
  EMBER_VJP1(log1p, g / (x + 1));
  EMBER_VJP1(sqrt, g / (y * 2));
  EMBER_VJP1(rsqrt, g * (y * y * y) * -0.5);
  EMBER_VJP1(square, g * (x * 2));
  EMBER_VJP1(reciprocal, -(g * (y * y)));
  EMBER_VJP1(sin, g * cos(x));
  EMBER_VJP1(cos, -(g * sin(x)));
  EMBER_VJP1(tan, g * (y * y + 1));
  EMBER_VJP1(asin, g * rsqrt(1 - x * x));
  EMBER_VJP1(acos, -(g * rsqrt(1 - x * x)));
  EMBER_VJP1(atan, g / (x * x + 1));
  EMBER_VJP1(sinh, g * cosh(x));
  EMBER_VJP1(cosh, g * sinh(x));
  EMBER_VJP1(tanh, g * (1 - y * y));
  EMBER_VJP1(asinh, g * rsqrt(x * x + 1));
  EMBER_VJP1(acosh, g * rsqrt(x * x - 1));
  EMBER_VJP1(atanh, g / (1 - x * x));
  EMBER_VJP1(erf, g * exp(-(x * x)) * kTwoOverSqrtPi);
  EMBER_VJP1(erfinv, g * exp(y * y) * kSqrtPiOverTwo);
  EMBER_VJP1(sigmoid, g * y * (1 - y));
  EMBER_VJP1(relu, where(y <= 0, 0, g));  // relu'(0) = 0; NaN passes g, like torch
  EMBER_VJP1(gelu, gelu_grad(g, x, a.mode));
  EMBER_VJP1(silu, silu_grad(g, x));
  // beta = f[0], threshold = f[1]; above the threshold softplus is the identity.
  EMBER_VJP1(softplus, where(x * a.f[0] > a.f[1], g, g * sigmoid(x * a.f[0])));
  EMBER_VJP1(mish, mish_grad(g, x));
  EMBER_VJP1(elu, elu_grad(g, x, a.f[0]));
  EMBER_VJP1(leaky_relu, where(x > 0, g, g * a.f[0]));
  EMBER_VJP1(hardswish, where(x < -3, 0, where(x <= 3, g * (x / 3 + 0.5), g)));
  EMBER_VJP1(hardsigmoid, where((x > -3) & (x < 3), g / 6, 0));
  EMBER_VJP1(nan_to_num, where(isfinite(x), g, 0));
}
#undef EMBER_VJP1

void register_rules_elementwise() {
  register_rules_unary();
  register_rules_binary();
  register_rules_ternary();
}

}  // namespace ember::autodiff

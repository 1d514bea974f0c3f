// VJP rules: broadcasting binary ops. Comparisons, logical and bitwise ops are marked
// non-differentiable where they are registered (ember/ops/binary.cpp).
#include "ember/autodiff/rules_elementwise.h"

namespace ember::autodiff {
namespace {

// Operands as the kernel computed with them (see `operand`); `g` comes first in every product so
// results keep the output's dtype (an int operand times g stays in g's dtype).
struct Binary {
  const Tensor& g;
  const Tensor& y;
  Tensor a, b;
  explicit Binary(const VjpCtx& c)
      : g(c.grad(0)), y(c.output(0)), a(operand(c, 0, y.dtype())), b(operand(c, 1, y.dtype())) {}
};

// `ga` and `gb` are the gradients at the output; each is evaluated only when its input wants one.
#define EMBER_VJP2(op, ga, gb)                                   \
  set_vjp(OpId::op, [](const VjpCtx& c) {                        \
    Binary v(c);                                                 \
    const Tensor &g = v.g, &y = v.y, &a = v.a, &b = v.b;         \
    (void)g, (void)y, (void)a, (void)b;                          \
    TensorList r(2);                                             \
    if (wants(c, 0)) r[0] = grad_for(ga, c.input(0));            \
    if (wants(c, 1)) r[1] = grad_for(gb, c.input(1));            \
    return r;                                                    \
  })

TensorList vjp_div(const VjpCtx& c) {
  TensorList r(2);
  if (c.attrs.mode != 0) {  // floor/trunc division is piecewise constant: zeros, like torch
    for (size_t i = 0; i < 2; ++i)
      if (wants(c, i)) r[i] = zeros_for(c.input(i));
    return r;
  }
  Binary v(c);
  if (wants(c, 0)) r[0] = grad_for(v.g / v.b, c.input(0));
  if (wants(c, 1)) r[1] = grad_for(-(v.g * v.y / v.b), c.input(1));  // -g a / b^2
  return r;
}

// torch: d/da = b a^(b-1), 0 where b == 0; d/db = a^b log a, 0 where a == 0 and b >= 0.
TensorList vjp_pow(const VjpCtx& c) {
  Binary v(c);
  TensorList r(2);
  if (wants(c, 0)) {
    // An integer exponent goes to the output dtype first: an unsigned b - 1 would wrap at 0.
    Tensor b = is_floating(v.b.dtype()) ? v.b : cast(v.b, v.y.dtype());
    r[0] = grad_for(where(v.b == 0, 0, v.g * v.b * pow(v.a, b - 1)), c.input(0));
  }
  if (wants(c, 1)) {
    Tensor a = v.a.dtype() == v.y.dtype() ? v.a : cast(v.a, v.y.dtype());
    r[1] = grad_for(v.g * where((v.a == 0) & (v.b >= 0), 0, v.y * log(a)), c.input(1));
  }
  return r;
}

}  // namespace

void register_rules_binary() {
  // add/sub with alpha reach the op as add(a, mul(b, alpha)), so the op itself has no alpha.
  EMBER_VJP2(add, g, g);
  EMBER_VJP2(sub, g, -g);
  EMBER_VJP2(mul, g * b, g * a);
  set_vjp(OpId::div, vjp_div);
  EMBER_VJP2(remainder, g, -(g * div(a, b, "floor")));
  EMBER_VJP2(fmod, g, -(g * div(a, b, "trunc")));
  set_vjp(OpId::pow, vjp_pow);
  EMBER_VJP2(atan2, g * b / (a * a + b * b), -(g * a / (a * a + b * b)));
  // Ties split the gradient evenly; a NaN on either side passes g to both, like torch.
  EMBER_VJP2(maximum, where(a < b, 0, where(a == b, g / 2, g)),
             where(a > b, 0, where(a == b, g / 2, g)));
  EMBER_VJP2(minimum, where(a > b, 0, where(a == b, g / 2, g)),
             where(a < b, 0, where(a == b, g / 2, g)));
}
#undef EMBER_VJP2

}  // namespace ember::autodiff

// VJP rules: broadcasting ternary ops (where, clamp, lerp, addcmul, addcdiv).
#include "ember/autodiff/rules_elementwise.h"

namespace ember::autodiff {
namespace {

// The condition never gets a gradient; each branch gets g where it was selected.
TensorList vjp_where(const VjpCtx& c) {
  const Tensor &g = c.grad(0), &cond = c.input(0);
  TensorList r(3);
  if (wants(c, 1)) r[1] = grad_for(where(cond, g, 0), c.input(1));
  if (wants(c, 2)) r[2] = grad_for(where(cond, 0, g), c.input(2));
  return r;
}

// torch's clamp_backward and clamp_backward_min_max: x gets g where lo <= x <= hi, a bound gets
// g where it was the result. With lo > hi the output is hi everywhere, so hi takes it all.
TensorList vjp_clamp(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  const DType d = c.output(0).dtype();
  Tensor x = operand(c, 0, d), lo = operand(c, 1, d), hi = operand(c, 2, d);
  const bool both = lo.defined() && hi.defined();
  TensorList r(3);
  if (wants(c, 0)) {
    Tensor inside = both ? (x >= lo) & (x <= hi) : lo.defined() ? x >= lo : x <= hi;
    r[0] = grad_for(where(inside, g, 0), c.input(0));
  }
  if (wants(c, 1)) {
    Tensor sel = both ? (x < lo) & (lo < hi) : x < lo;
    r[1] = grad_for(where(sel, g, 0), c.input(1));
  }
  if (wants(c, 2)) {
    Tensor sel = both ? (x > hi) | (hi < lo) : x > hi;
    r[2] = grad_for(where(sel, g, 0), c.input(2));
  }
  return r;
}

// lerp(a, b, w) = a + w (b - a).
TensorList vjp_lerp(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  const DType d = c.output(0).dtype();
  Tensor a = operand(c, 0, d), b = operand(c, 1, d), w = operand(c, 2, d);
  TensorList r(3);
  if (wants(c, 0)) r[0] = grad_for(g - g * w, c.input(0));
  if (wants(c, 1)) r[1] = grad_for(g * w, c.input(1));
  if (wants(c, 2)) r[2] = grad_for(g * (b - a), c.input(2));
  return r;
}

// addcmul(x, t1, t2, value) = x + value t1 t2; addcdiv = x + value t1 / t2 (value: attrs.s[0]).
template <bool Div>
TensorList vjp_addc(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  const DType d = c.output(0).dtype();
  Tensor t1 = operand(c, 1, d), t2 = operand(c, 2, d);
  Tensor gv = wants(c, 1) || wants(c, 2) ? g * c.attrs.s[0] : Tensor();
  TensorList r(3);
  if (wants(c, 0)) r[0] = grad_for(g, c.input(0));
  if (wants(c, 1)) r[1] = grad_for(Div ? gv / t2 : gv * t2, c.input(1));
  if (wants(c, 2)) r[2] = grad_for(Div ? -(gv * t1 / t2 / t2) : gv * t1, c.input(2));
  return r;
}

}  // namespace

void register_rules_ternary() {
  set_vjp(OpId::where, vjp_where);
  set_vjp(OpId::clamp, vjp_clamp);
  set_vjp(OpId::lerp, vjp_lerp);
  set_vjp(OpId::addcmul, vjp_addc<false>);
  set_vjp(OpId::addcdiv, vjp_addc<true>);
}

}  // namespace ember::autodiff

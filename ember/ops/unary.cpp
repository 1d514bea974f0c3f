// Unary ops: API, inference and registration.
// Attrs: cast: dtype. gelu: mode = ops::GeluApprox. softplus: f[0] beta, f[1] threshold.
// elu: f[0] alpha. leaky_relu: f[0] slope. nan_to_num: f[0] nan, f[1] posinf, f[2] neginf,
// b[0]/b[1] posinf/neginf given.
#include "ember/ops/unary.h"

#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/ops/modes.h"

namespace ember {
namespace {

enum class Rule { Float, Same, SameNoBool, Bool, IntOrBool, Cast, IntToI64 };

Rule rule_of(OpId op) {
  switch (op) {
    case OpId::cast: return Rule::Cast;
    case OpId::neg: case OpId::abs: case OpId::relu: case OpId::leaky_relu:
      return Rule::SameNoBool;
    case OpId::sign: case OpId::floor: case OpId::ceil: case OpId::round: case OpId::trunc:
    case OpId::nan_to_num:
      return Rule::Same;
    case OpId::square: return Rule::IntToI64;
    case OpId::logical_not: case OpId::isnan: case OpId::isinf: case OpId::isfinite:
      return Rule::Bool;
    case OpId::bitwise_not: return Rule::IntOrBool;
    default: return Rule::Float;
  }
}

void infer_unary(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  ops::require_defined(in[0], name);
  DType d = in[0].dtype(), r = d;
  switch (rule_of(op)) {
    case Rule::Float: r = ops::float_result(d); break;
    case Rule::Same: break;
    case Rule::SameNoBool:
      ops::require_dtype(name, d, kNumericDTypes | kComplexDTypes, "a numeric dtype (not bool)");
      if (op == OpId::abs) r = complex_part_dtype(d);  // |z| is real
      break;
    case Rule::IntToI64: r = d == DType::Bool ? DType::I64 : d; break;
    case Rule::Bool: r = DType::Bool; break;
    case Rule::IntOrBool:
      ops::require_dtype(name, d, kIntDTypes | mask_of(DType::Bool), "an integer or bool dtype");
      break;
    case Rule::Cast:
      if (!a.has_dtype) detail::throw_value(name, "expected a target dtype");
      r = a.dtype;
      break;
    default: break;
  }
  out.add(in[0].shape(), r);
}

Tensor unary(OpId op, const Tensor& x, const Attrs& a = {}) { return dispatch1(op, a, {x}); }

}  // namespace

Tensor cast(const Tensor& x, DType dtype) {
  // A constant folds at the front end: its cast is another constant, never a kernel.
  // (The result is a plain 0-d tensor in promotion, not a wrapped number, as a kernel's would be.)
  if (detail::is_constant(x))
    return x.dtype() == dtype && !x.impl()->wrapped_number
               ? x
               : detail::constant_tensor(x.impl()->constant, dtype, x.device(), false);
  Attrs a;
  a.dtype = dtype;
  a.has_dtype = true;
  return unary(OpId::cast, x, a);
}

#define EMBER_UNARY_DEF(name) \
  Tensor name(const Tensor& x) { return unary(OpId::name, x); }
EMBER_UNARY_DEF(neg) EMBER_UNARY_DEF(abs) EMBER_UNARY_DEF(sign) EMBER_UNARY_DEF(exp)
EMBER_UNARY_DEF(exp2) EMBER_UNARY_DEF(expm1) EMBER_UNARY_DEF(log) EMBER_UNARY_DEF(log2)
EMBER_UNARY_DEF(log10) EMBER_UNARY_DEF(log1p) EMBER_UNARY_DEF(sqrt) EMBER_UNARY_DEF(rsqrt)
EMBER_UNARY_DEF(square) EMBER_UNARY_DEF(reciprocal) EMBER_UNARY_DEF(sin) EMBER_UNARY_DEF(cos)
EMBER_UNARY_DEF(tan) EMBER_UNARY_DEF(asin) EMBER_UNARY_DEF(acos) EMBER_UNARY_DEF(atan)
EMBER_UNARY_DEF(sinh) EMBER_UNARY_DEF(cosh) EMBER_UNARY_DEF(tanh) EMBER_UNARY_DEF(asinh)
EMBER_UNARY_DEF(acosh) EMBER_UNARY_DEF(atanh) EMBER_UNARY_DEF(erf) EMBER_UNARY_DEF(erfinv)
EMBER_UNARY_DEF(floor) EMBER_UNARY_DEF(ceil) EMBER_UNARY_DEF(round) EMBER_UNARY_DEF(trunc)
EMBER_UNARY_DEF(sigmoid) EMBER_UNARY_DEF(relu) EMBER_UNARY_DEF(silu) EMBER_UNARY_DEF(mish)
EMBER_UNARY_DEF(hardswish) EMBER_UNARY_DEF(hardsigmoid) EMBER_UNARY_DEF(logical_not)
EMBER_UNARY_DEF(bitwise_not) EMBER_UNARY_DEF(isnan) EMBER_UNARY_DEF(isinf)
EMBER_UNARY_DEF(isfinite)
#undef EMBER_UNARY_DEF

Tensor gelu(const Tensor& x, const std::string& approximate) {
  Attrs a;
  a.mode = uint8_t(ops::parse_gelu_approx("gelu", approximate));
  return unary(OpId::gelu, x, a);
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  Attrs a;
  a.f = {beta, threshold, 0, 0};
  return unary(OpId::softplus, x, a);
}
Tensor elu(const Tensor& x, double alpha) {
  Attrs a;
  a.f[0] = alpha;
  return unary(OpId::elu, x, a);
}
Tensor leaky_relu(const Tensor& x, double slope) {
  Attrs a;
  a.f[0] = slope;
  return unary(OpId::leaky_relu, x, a);
}
Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  Attrs a;
  a.f = {nan, posinf.value_or(0), neginf.value_or(0), 0};
  a.b = {posinf.has_value(), neginf.has_value(), false, false};
  return unary(OpId::nan_to_num, x, a);
}

namespace ops {
void register_unary_ops() {
  set_infer_for_category(OpCategory::Unary, infer_unary);
  for (OpId op : {OpId::sign, OpId::floor, OpId::ceil, OpId::round, OpId::trunc,
                  OpId::logical_not, OpId::bitwise_not, OpId::isnan, OpId::isinf, OpId::isfinite})
    op_def_mut(op).differentiable = false;
}
}  // namespace ops

}  // namespace ember

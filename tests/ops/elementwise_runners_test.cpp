// Golden runners for unary, binary and ternary ops: map a case's inputs/attrs onto the public API.
#include "golden.h"

namespace ember::test {
namespace {

bool is_scalar(const Case& c, size_t i) {
  return i < c.inputs.size() && c.inputs[i].is_object() && c.inputs[i].contains("scalar");
}

#define UNARY_RUNNER(op) \
  EMBER_RUNNER(op) { return {ember::op(make_tensor(c.inputs.at(0), dev))}; }
UNARY_RUNNER(neg) UNARY_RUNNER(abs) UNARY_RUNNER(sign) UNARY_RUNNER(exp) UNARY_RUNNER(exp2)
UNARY_RUNNER(expm1) UNARY_RUNNER(log) UNARY_RUNNER(log2) UNARY_RUNNER(log10) UNARY_RUNNER(log1p)
UNARY_RUNNER(sqrt) UNARY_RUNNER(rsqrt) UNARY_RUNNER(square) UNARY_RUNNER(reciprocal)
UNARY_RUNNER(sin) UNARY_RUNNER(cos) UNARY_RUNNER(tan) UNARY_RUNNER(asin) UNARY_RUNNER(acos)
UNARY_RUNNER(atan) UNARY_RUNNER(sinh) UNARY_RUNNER(cosh) UNARY_RUNNER(tanh) UNARY_RUNNER(asinh)
UNARY_RUNNER(acosh) UNARY_RUNNER(atanh) UNARY_RUNNER(erf) UNARY_RUNNER(erfinv)
UNARY_RUNNER(floor) UNARY_RUNNER(ceil) UNARY_RUNNER(round) UNARY_RUNNER(trunc)
UNARY_RUNNER(sigmoid) UNARY_RUNNER(relu) UNARY_RUNNER(silu) UNARY_RUNNER(mish)
UNARY_RUNNER(hardswish) UNARY_RUNNER(hardsigmoid) UNARY_RUNNER(logical_not)
UNARY_RUNNER(bitwise_not) UNARY_RUNNER(isnan) UNARY_RUNNER(isinf) UNARY_RUNNER(isfinite)
#undef UNARY_RUNNER

EMBER_RUNNER(cast) {
  return {cast(make_tensor(c.inputs.at(0), dev), dtype_from_name(c.attrs.at("dtype").get<std::string>()))};
}
EMBER_RUNNER(gelu) {
  return {gelu(make_tensor(c.inputs.at(0), dev), c.attrs.value("approximate", "none"))};
}
EMBER_RUNNER(softplus) {
  return {softplus(make_tensor(c.inputs.at(0), dev), c.attrs.value("beta", 1.0), c.attrs.value("threshold", 20.0))};
}
EMBER_RUNNER(elu) { return {elu(make_tensor(c.inputs.at(0), dev), c.attrs.value("alpha", 1.0))}; }
EMBER_RUNNER(leaky_relu) {
  return {leaky_relu(make_tensor(c.inputs.at(0), dev), c.attrs.value("slope", 0.01))};
}
EMBER_RUNNER(nan_to_num) {
  std::optional<double> pos, neg;
  if (c.attrs.contains("posinf")) pos = c.attrs["posinf"].get<double>();
  if (c.attrs.contains("neginf")) neg = c.attrs["neginf"].get<double>();
  return {nan_to_num(make_tensor(c.inputs.at(0), dev), c.attrs.value("nan", 0.0), pos, neg)};
}

// Binary ops accept Tensor/Tensor, Tensor/Scalar and Scalar/Tensor.
#define BINARY_RUNNER(op)                                                              \
  EMBER_RUNNER(op) {                                                                   \
    if (is_scalar(c, 1)) return {ember::op(make_tensor(c.inputs[0], dev), scalar_of(c.inputs[1]))}; \
    if (is_scalar(c, 0)) return {ember::op(scalar_of(c.inputs[0]), make_tensor(c.inputs[1], dev))}; \
    return {ember::op(make_tensor(c.inputs.at(0), dev), make_tensor(c.inputs.at(1), dev))};         \
  }
BINARY_RUNNER(add) BINARY_RUNNER(sub) BINARY_RUNNER(mul) BINARY_RUNNER(remainder)
BINARY_RUNNER(fmod) BINARY_RUNNER(pow) BINARY_RUNNER(atan2) BINARY_RUNNER(maximum)
BINARY_RUNNER(minimum) BINARY_RUNNER(eq) BINARY_RUNNER(ne) BINARY_RUNNER(lt) BINARY_RUNNER(le)
BINARY_RUNNER(gt) BINARY_RUNNER(ge) BINARY_RUNNER(logical_and) BINARY_RUNNER(logical_or)
BINARY_RUNNER(logical_xor) BINARY_RUNNER(bitwise_and) BINARY_RUNNER(bitwise_or)
BINARY_RUNNER(bitwise_xor) BINARY_RUNNER(bitwise_left_shift) BINARY_RUNNER(bitwise_right_shift)
#undef BINARY_RUNNER

EMBER_RUNNER(div) {
  if (c.attrs.contains("rounding_mode"))
    return {div(make_tensor(c.inputs.at(0), dev), make_tensor(c.inputs.at(1), dev),
                c.attrs["rounding_mode"].get<std::string>())};
  if (is_scalar(c, 1)) return {div(make_tensor(c.inputs[0], dev), scalar_of(c.inputs[1]))};
  if (is_scalar(c, 0)) return {div(scalar_of(c.inputs[0]), make_tensor(c.inputs[1], dev))};
  return {div(make_tensor(c.inputs.at(0), dev), make_tensor(c.inputs.at(1), dev))};
}

EMBER_RUNNER(where) {
  Tensor cond = make_tensor(c.inputs.at(0), dev);
  if (is_scalar(c, 2)) return {where(cond, make_tensor(c.inputs[1], dev), scalar_of(c.inputs[2]))};
  return {where(cond, make_tensor(c.inputs.at(1), dev), make_tensor(c.inputs.at(2), dev))};
}
EMBER_RUNNER(clamp) {
  Tensor x = make_tensor(c.inputs.at(0), dev);
  if (is_scalar(c, 1) || is_scalar(c, 2) || c.inputs[1].is_null() || c.inputs[2].is_null()) {
    std::optional<Scalar> lo, hi;
    if (is_scalar(c, 1)) lo = scalar_of(c.inputs[1]);
    if (is_scalar(c, 2)) hi = scalar_of(c.inputs[2]);
    return {clamp(x, lo, hi)};
  }
  return {clamp(x, make_tensor(c.inputs[1], dev), make_tensor(c.inputs[2], dev))};
}
EMBER_RUNNER(lerp) {
  Tensor a = make_tensor(c.inputs.at(0), dev), b = make_tensor(c.inputs.at(1), dev);
  if (is_scalar(c, 2)) return {lerp(a, b, scalar_of(c.inputs[2]))};
  return {lerp(a, b, make_tensor(c.inputs.at(2), dev))};
}
EMBER_RUNNER(addcmul) {
  auto in = inputs_of(c, dev);
  return {addcmul(in.at(0), in.at(1), in.at(2), c.attrs.at("value").get<double>())};
}
EMBER_RUNNER(addcdiv) {
  auto in = inputs_of(c, dev);
  return {addcdiv(in.at(0), in.at(1), in.at(2), c.attrs.at("value").get<double>())};
}

}  // namespace
}  // namespace ember::test

// Elementwise ONNX ops: unary maths and activations, broadcasting binary ops, variadic
// Max/Min/Sum/Mean, Where, Clip and casts. ONNX keeps the input's dtype where PyTorch would
// promote (Pow, integer Div), so those cast back.
#include <cmath>

#include "ember/onnx/ops.h"
#include "ember/tensor_impl.h"

namespace ember::onnx::detail {
namespace {

using UnaryFn = Tensor (*)(const Tensor&);
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

template <UnaryFn F>
TensorList unary(const OpArgs& a) {
  return {F(a[0])};
}
template <BinaryFn F>
TensorList binary(const OpArgs& a) {
  return {F(a[0], a[1])};
}

Tensor scalar_as(const Tensor& x, double v) { return scalar_tensor(v, x.dtype(), x.device()); }

TensorList identity(const OpArgs& a) { return {a[0]}; }

TensorList div_op(const OpArgs& a) {
  if (is_floating(a[0].dtype())) return {div(a[0], a[1])};
  return {div(a[0], a[1], "trunc")};
}
TensorList pow_op(const OpArgs& a) { return {pow(a[0], a[1]).to(a[0].dtype())}; }
TensorList mod_op(const OpArgs& a) {
  if (a.node.i("fmod", 0)) return {fmod(a[0], a[1])};
  return {remainder(a[0], a[1])};
}
TensorList bitshift(const OpArgs& a) {
  std::string dir = a.node.s("direction", "");
  if (dir == "LEFT") return {bitwise_left_shift(a[0], a[1])};
  if (dir == "RIGHT") return {bitwise_right_shift(a[0], a[1])};
  invalid(a.node, "direction must be LEFT or RIGHT, got '" + dir + "'");
}

template <BinaryFn F>
TensorList variadic(const OpArgs& a) {
  Tensor acc = a[0];
  for (size_t k = 1; k < a.size(); ++k) acc = F(acc, a[k]);
  return {acc};
}
TensorList mean_op(const OpArgs& a) {
  Tensor acc = a[0];
  for (size_t k = 1; k < a.size(); ++k) acc = add(acc, a[k]);
  return {div(acc, scalar_as(acc, double(a.size())))};
}

TensorList where_op(const OpArgs& a) { return {where(a[0].to(kBool), a[1], a[2])}; }

TensorList clip(const OpArgs& a) {
  const Tensor& x = a[0];
  if (a.node.opset < 11) {
    return {clamp(x, Scalar(a.node.f("min", -INFINITY)), Scalar(a.node.f("max", INFINITY)))};
  }
  // Bounds the host holds (constants, as in relu6) become one clamp, which the cpu device fuses
  // into the convolution before it; reading them elsewhere would be a device sync.
  auto host_scalar = [&](size_t i) {
    const Tensor& t = a[i];
    const Backend b = t.device().backend();
    return (b == Backend::Flex || b == Backend::Cpu) && t.numel() == 1 && t.dtype() == x.dtype() &&
           !ember::detail::is_pending(t);
  };
  if (a.has(1) && a.has(2) && is_floating(x.dtype()) && host_scalar(1) && host_scalar(2))
    return {clamp(x, Scalar(a[1].item<double>()), Scalar(a[2].item<double>()))};
  Tensor y = x;
  if (a.has(1)) y = maximum(y, a[1]);
  if (a.has(2)) y = minimum(y, a[2]);
  return {y};
}

TensorList cast_op(const OpArgs& a) {
  auto d = dtype_of(int32_t(a.node.i("to", 0)));
  if (!d) unsupported(a.node, "a cast to ONNX type " + std::to_string(a.node.i("to", 0)));
  return {a[0].to(*d)};
}
TensorList cast_like(const OpArgs& a) { return {a[0].to(a[1].dtype())}; }

// --- activations that ember composes here ---
TensorList elu_op(const OpArgs& a) { return {elu(a[0], a.node.f("alpha", 1.0))}; }
TensorList leaky_relu_op(const OpArgs& a) {
  return {leaky_relu(a[0], a.node.f("alpha", 0.01))};
}
TensorList selu(const OpArgs& a) {
  double alpha = a.node.f("alpha", 1.67326319217681884765625);
  double gamma = a.node.f("gamma", 1.05070102214813232421875);
  return {mul(elu(a[0], alpha), gamma)};
}
TensorList celu(const OpArgs& a) {
  double alpha = a.node.f("alpha", 1.0);
  const Tensor& x = a[0];
  return {add(relu(x), minimum(scalar_as(x, 0), mul(expm1(div(x, alpha)), alpha)))};
}
TensorList hard_sigmoid(const OpArgs& a) {
  double alpha = a.node.f("alpha", 0.2), beta = a.node.f("beta", 0.5);
  return {clamp(add(mul(a[0], alpha), beta), Scalar(0.0), Scalar(1.0))};
}
TensorList thresholded_relu(const OpArgs& a) {
  const Tensor& x = a[0];
  return {where(gt(x, a.node.f("alpha", 1.0)), x, scalar_as(x, 0))};
}
TensorList shrink(const OpArgs& a) {
  double lambd = a.node.f("lambd", 0.5), bias = a.node.f("bias", 0.0);
  const Tensor& x = a[0];
  Tensor zero = scalar_as(x, 0);
  return {where(lt(x, -lambd), add(x, scalar_as(x, bias)),
                where(gt(x, lambd), sub(x, scalar_as(x, bias)), zero))};
}
TensorList softsign(const OpArgs& a) { return {div(a[0], add(abs(a[0]), 1.0))}; }
TensorList softplus_op(const OpArgs& a) {
  // ONNX's softplus has no threshold: log(exp(x) + 1) everywhere.
  return {softplus(a[0], 1.0, INFINITY)};
}
TensorList prelu(const OpArgs& a) {
  const Tensor& x = a[0];
  return {where(lt(x, scalar_as(x, 0)), mul(x, a[1]), x)};
}
TensorList isinf_op(const OpArgs& a) {
  const Tensor& x = a[0];
  bool pos = a.node.i("detect_positive", 1), neg = a.node.i("detect_negative", 1);
  Tensor inf = isinf(x);
  if (pos && neg) return {inf};
  if (pos) return {logical_and(inf, gt(x, scalar_as(x, 0)))};
  if (neg) return {logical_and(inf, lt(x, scalar_as(x, 0)))};
  return {zeros_like(x, {.dtype = kBool})};
}
TensorList sign_op(const OpArgs& a) { return {sign(a[0])}; }
TensorList not_op(const OpArgs& a) { return {logical_not(a[0])}; }
TensorList bitwise_not_op(const OpArgs& a) { return {bitwise_not(a[0])}; }

}  // namespace

void add_elementwise_ops(OpTable& t) {
  t["Abs"] = unary<&abs>;
  t["Neg"] = unary<&neg>;
  t["Exp"] = unary<&exp>;
  t["Log"] = unary<&log>;
  t["Sqrt"] = unary<&sqrt>;
  t["Reciprocal"] = unary<&reciprocal>;
  t["Sin"] = unary<&sin>;
  t["Cos"] = unary<&cos>;
  t["Tan"] = unary<&tan>;
  t["Asin"] = unary<&asin>;
  t["Acos"] = unary<&acos>;
  t["Atan"] = unary<&atan>;
  t["Sinh"] = unary<&sinh>;
  t["Cosh"] = unary<&cosh>;
  t["Tanh"] = unary<&tanh>;
  t["Asinh"] = unary<&asinh>;
  t["Acosh"] = unary<&acosh>;
  t["Atanh"] = unary<&atanh>;
  t["Erf"] = unary<&erf>;
  t["Floor"] = unary<&floor>;
  t["Ceil"] = unary<&ceil>;
  t["Round"] = unary<&round>;
  t["Sigmoid"] = unary<&sigmoid>;
  t["Relu"] = unary<&relu>;
  t["HardSwish"] = unary<&hardswish>;
  t["Mish"] = unary<&mish>;
  t["IsNaN"] = unary<&isnan>;
  t["Sign"] = sign_op;
  t["Not"] = not_op;
  t["BitwiseNot"] = bitwise_not_op;
  t["Identity"] = identity;
  t["Elu"] = elu_op;
  t["LeakyRelu"] = leaky_relu_op;
  t["Selu"] = selu;
  t["Celu"] = celu;
  t["HardSigmoid"] = hard_sigmoid;
  t["ThresholdedRelu"] = thresholded_relu;
  t["Shrink"] = shrink;
  t["Softsign"] = softsign;
  t["Softplus"] = softplus_op;
  t["PRelu"] = prelu;
  t["IsInf"] = isinf_op;

  t["Add"] = binary<&add>;
  t["Sub"] = binary<&sub>;
  t["Mul"] = binary<&mul>;
  t["Div"] = div_op;
  t["Pow"] = pow_op;
  t["Mod"] = mod_op;
  t["Equal"] = binary<&eq>;
  t["Less"] = binary<&lt>;
  t["LessOrEqual"] = binary<&le>;
  t["Greater"] = binary<&gt>;
  t["GreaterOrEqual"] = binary<&ge>;
  t["And"] = binary<&logical_and>;
  t["Or"] = binary<&logical_or>;
  t["Xor"] = binary<&logical_xor>;
  t["BitwiseAnd"] = binary<&bitwise_and>;
  t["BitwiseOr"] = binary<&bitwise_or>;
  t["BitwiseXor"] = binary<&bitwise_xor>;
  t["BitShift"] = bitshift;
  t["Max"] = variadic<&maximum>;
  t["Min"] = variadic<&minimum>;
  t["Sum"] = variadic<&add>;
  t["Mean"] = mean_op;
  t["Where"] = where_op;
  t["Clip"] = clip;
  t["Cast"] = cast_op;
  t["CastLike"] = cast_like;
}

}  // namespace ember::onnx::detail

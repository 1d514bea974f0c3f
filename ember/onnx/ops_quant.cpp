// Quantization ONNX ops composed from ember ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv. Integer products
// run in int32 (ember's integer matmul wraps like ONNX's int32 accumulator); integer convolutions
// run in float64, exact for the sizes quantized models use. A registry op with int32 accumulation
// would serve both.
#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

// A per-tensor (0-d or [1]) or per-axis ([C]) parameter shaped to broadcast against x.
Tensor along(const Tensor& p, const Tensor& x, int64_t axis) {
  if (p.numel() == 1) return p.reshape({});
  if (axis < 0) axis += x.dim();
  if (axis < 0 || axis >= x.dim())
    throw ModelError("[onnx] axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(x.dim()));
  std::vector<int64_t> s(static_cast<size_t>(x.dim()), 1);
  s[size_t(axis)] = p.numel();
  return p.reshape(to_shape(s));
}

Tensor saturate(const Tensor& v, DType d) {
  double lo = d == kU8 ? 0 : -128, hi = d == kU8 ? 255 : 127;
  return clamp(v, Scalar(lo), Scalar(hi)).to(d);
}

TensorList quantize(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t axis = a.node.i("axis", 1);
  DType out = a.has(2) ? a[2].dtype() : kU8;
  if (out != kU8 && out != kI8) unsupported(a.node, "output type other than uint8/int8");
  Tensor q = round(div(x.to(kF32), along(a[1], x, axis).to(kF32)));
  if (a.has(2)) q = add(q, along(a[2], x, axis).to(kF32));
  return {saturate(q, out)};
}

TensorList dequantize(const OpArgs& a) {
  const Tensor& x = a[0];
  int64_t axis = a.node.i("axis", 1);
  Tensor v = x.to(kF32);
  if (a.has(2)) v = sub(v, along(a[2], x, axis).to(kF32));
  return {mul(v, along(a[1], x, axis).to(kF32))};
}

TensorList dynamic_quantize(const OpArgs& a) {
  Tensor x = a[0].to(kF32);
  Tensor lo = minimum(amin(x), scalar_tensor(0.0f, kF32, x.device()));
  Tensor hi = maximum(amax(x), scalar_tensor(0.0f, kF32, x.device()));
  Tensor scale = div(sub(hi, lo), 255.0);
  Tensor zp = saturate(round(sub(scalar_tensor(0.0f, kF32, x.device()), div(lo, scale))), kU8);
  Tensor y = saturate(add(round(div(x, scale)), zp.to(kF32)), kU8);
  return {y, scale, zp};
}

Tensor minus_zero_point(const Tensor& x, const OpArgs& a, size_t zp, int64_t axis) {
  Tensor v = x.to(kI32);
  if (!a.has(zp)) return v;
  return sub(v, a[zp].numel() == 1 ? a[zp].reshape({}).to(kI32) : along(a[zp], x, axis).to(kI32));
}

TensorList matmul_integer(const OpArgs& a) {
  const Tensor& A = a[0];
  const Tensor& B = a[1];
  // a_zero_point is per row of A (its dim -2), b_zero_point per column of B (its dim -1).
  Tensor av = minus_zero_point(A, a, 2, std::max<int64_t>(A.dim() - 2, 0));
  Tensor bv = minus_zero_point(B, a, 3, B.dim() - 1);
  return {matmul(av, bv)};
}

// The convolution of integer values already shifted by their zero points, exact in float64.
Tensor integer_conv(const OpArgs& a, const Tensor& x, const Tensor& w) {
  std::vector<int64_t> ks(w.shape().begin() + 2, w.shape().end());
  auto pads = a.node.ints("pads", std::vector<int64_t>(2 * ks.size(), 0));
  ConvOptions o{.stride = to_shape(a.node.ints("strides", std::vector<int64_t>(ks.size(), 1))),
                .padding = to_shape(std::vector<int64_t>(pads.begin(), pads.begin() + int64_t(ks.size()))),
                .dilation = to_shape(a.node.ints("dilations", std::vector<int64_t>(ks.size(), 1))),
                .groups = a.node.i("group", 1)};
  if (x.dim() != 4) unsupported(a.node, "only 2-d integer convolution");
  return round(conv2d(x.to(kF64), w.to(kF64), {}, o));
}

TensorList conv_integer(const OpArgs& a) {
  return {
      integer_conv(a, minus_zero_point(a[0], a, 2, 1), minus_zero_point(a[1], a, 3, 0)).to(kI32)};
}

// QLinear*: the integer product of the shifted operands, rescaled by a_scale * b_scale / y_scale
// (per tensor, or per output channel for the weights), rounded half to even and shifted by
// y_zero_point.
Tensor requantize(const OpArgs& a, Tensor acc, int64_t axis) {
  acc = mul(acc.to(kF64), div(mul(a[1].reshape({}).to(kF64), along(a[4], acc, axis).to(kF64)),
                              a[6].reshape({}).to(kF64)));
  Tensor q = round(acc);
  DType out = a.has(7) ? a[7].dtype() : kU8;
  if (a.has(7)) q = add(q, a[7].reshape({}).to(kF64));
  return saturate(q, out);
}

TensorList qlinear_matmul(const OpArgs& a) {
  const Tensor& A = a[0];
  const Tensor& B = a[3];
  Tensor av = minus_zero_point(A, a, 2, std::max<int64_t>(A.dim() - 2, 0));
  Tensor bv = minus_zero_point(B, a, 5, B.dim() - 1);
  Tensor acc = matmul(av, bv);
  return {requantize(a, acc, acc.dim() - 1)};
}

TensorList qlinear_conv(const OpArgs& a) {
  Tensor acc = integer_conv(a, minus_zero_point(a[0], a, 2, 1), minus_zero_point(a[3], a, 5, 0));
  if (a.has(8)) acc = add(acc, a[8].to(kF64).reshape({1, -1, 1, 1}));
  return {requantize(a, acc, 1)};
}

}  // namespace

void add_quant_ops(OpTable& t) {
  t["QuantizeLinear"] = quantize;
  t["DequantizeLinear"] = dequantize;
  t["DynamicQuantizeLinear"] = dynamic_quantize;
  t["MatMulInteger"] = matmul_integer;
  t["ConvInteger"] = conv_integer;
  t["QLinearMatMul"] = qlinear_matmul;
  t["QLinearConv"] = qlinear_conv;
}

}  // namespace ember::onnx::detail

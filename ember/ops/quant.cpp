// Weight-only quantization: the schemes (written in ember ops, so they run on every device), the
// quantized products' API, inference and decompositions. The schemes are described in quant.h.
// linear_int8 inputs {x, values i8 [N, K], scale [N], bias [N] (may be undefined)}.
// linear_int4 inputs {x, values u8 [N, K / 2], scale [N, K / G], zero u8 [N, K / G], bias};
// attrs i[0] = G, the group size. The decompositions dequantize the weight and call linear: what
// backends without a kernel (cuda) run, and what autodiff records for an input's gradient.
#include "ember/ops/quant.h"

#include "ember/autodiff.h"
#include "ember/ops/binary.h"
#include "ember/ops/common.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember {
namespace {

std::string dt(DType d) { return std::string(dtype_name(d)); }
std::string num(int64_t v) { return std::to_string(v); }

void check_weight(const char* op, const Tensor& w) {
  ops::require_defined(w, op, "the weight");
  if (!is_floating(w.dtype())) detail::throw_dtype(op, "expected a floating weight, found " + dt(w.dtype()));
  if (w.dim() != 2)
    detail::throw_shape(op, "expected a 2-D weight [out, in], found shape " + shape_str(w.shape()));
  NoGradGuard ng;
  if (w.numel() && !all(isfinite(w)).item<bool>())
    detail::throw_value(op, "the weight holds NaN or infinite values");
}

void check_group(const char* op, int64_t group, int64_t in) {
  if (group <= 0 || group % 2)
    detail::throw_value(op, "expected a positive, even group_size, found " + num(group));
  if (in % group)
    detail::throw_value(op, "group_size " + num(group) + " does not divide the input size " +
                                num(in) + " (use a group_size that divides it, such as 32)");
}

// The input and bias of a product with a weight of `out` rows and `in` columns; its output shape.
Shape check_input(const char* op, const Tensor& x, int64_t out, int64_t in, const Tensor& bias) {
  ops::require_defined(x, op, "the input");
  ops::require_dtype(op, x.dtype(), mask_of(DType::F32) | mask_of(DType::F16) | mask_of(DType::BF16),
                     "an f32, f16 or bf16 input");
  if (x.dim() == 0) detail::throw_shape(op, "expected an input of at least 1-D, found 0-D");
  if (x.size(-1) != in)
    detail::throw_shape(op, "input of shape " + shape_str(x.shape()) + " has " + num(x.size(-1)) +
                                " features, the weight takes " + num(in));
  if (bias.defined()) {
    if (bias.dtype() != x.dtype())
      detail::throw_dtype(op, "expected the bias to have the input's dtype " + dt(x.dtype()) +
                                  ", found " + dt(bias.dtype()));
    if (bias.dim() != 1 || bias.size(0) != out)
      detail::throw_shape(op, "expected a bias of shape [" + num(out) + "], found " +
                                  shape_str(bias.shape()));
  }
  Shape s = x.shape();
  s[s.size() - 1] = out;
  return s;
}

void check_part(const char* op, const Tensor& t, const Shape& want, DTypeMask dtypes,
                const char* what, const char* dtype_word) {
  ops::require_defined(t, op, what);
  if (!(dtypes & mask_of(t.dtype())))
    detail::throw_dtype(op, std::string("expected ") + what + " to be " + dtype_word + ", found " +
                                dt(t.dtype()));
  if (t.shape() != want)
    detail::throw_shape(op, std::string("expected ") + what + " of shape " + shape_str(want) +
                                ", found " + shape_str(t.shape()));
}

void require_matrix(const char* op, const Tensor& q, DType want, const char* what) {
  ops::require_defined(q, op, what);
  if (q.dtype() != want)
    detail::throw_dtype(op, std::string("expected ") + what + " of dtype " + dt(want) + ", found " +
                                dt(q.dtype()));
  if (q.dim() != 2)
    detail::throw_shape(op, std::string("expected ") + what + " to be 2-D, found shape " +
                                shape_str(q.shape()));
}

void infer_quant(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (op == OpId::linear_int8) {
    if (in.size() != 4) detail::throw_value(name, "expected inputs (x, values, scale, bias)");
    const Tensor& q = in[1];
    require_matrix(name, q, DType::I8, "the weight values");
    check_part(name, in[2], {q.size(0)}, kFloatDTypes, "the scale", "floating");
    out.add(check_input(name, in[0], q.size(0), q.size(1), in[3]), in[0].dtype());
    return;
  }
  if (in.size() != 5) detail::throw_value(name, "expected inputs (x, values, scale, zero, bias)");
  const Tensor& q = in[1];
  require_matrix(name, q, DType::U8, "the packed weight values");
  const int64_t n = q.size(0), k = 2 * q.size(1), g = a.i[0];
  check_group(name, g, k);
  check_part(name, in[2], {n, k / g}, kFloatDTypes, "the scale", "floating");
  check_part(name, in[3], {n, k / g}, mask_of(DType::U8), "the zero points", "uint8");
  out.add(check_input(name, in[0], n, k, in[4]), in[0].dtype());
}

Tensor dequant8(const Tensor& q, const Tensor& scale, DType t) {
  return cast(q, t) * cast(scale, t).unsqueeze(1);
}

Tensor dequant4(const Tensor& q, const Tensor& scale, const Tensor& zero, int64_t g, DType t) {
  const int64_t n = q.size(0), k = 2 * q.size(1);
  Tensor v = stack({bitwise_and(q, 15), bitwise_right_shift(q, 4)}, -1).reshape({n, k / g, g});
  return ((cast(v, t) - cast(zero, t).unsqueeze(-1)) * cast(scale, t).unsqueeze(-1))
      .reshape({n, k});
}

TensorList decompose_int8(const Attrs&, std::span<const Tensor> in) {
  return {linear(in[0], dequant8(in[1], in[2], in[0].dtype()), in[3])};
}

TensorList decompose_int4(const Attrs& a, std::span<const Tensor> in) {
  return {linear(in[0], dequant4(in[1], in[2], in[3], a.i[0], in[0].dtype()), in[4])};
}

}  // namespace

QuantizedInt8 quantize_int8(const Tensor& weight) {
  check_weight("quantize_int8", weight);
  NoGradGuard ng;
  const int64_t n = weight.size(0);
  const TensorOptions f32{DType::F32, weight.device()};
  if (weight.size(1) == 0) return {empty({n, 0}, {DType::I8, weight.device()}), zeros({n}, f32)};
  Tensor w = cast(weight, DType::F32);
  Tensor scale = amax(abs(w), {1}) / 127.0;
  Tensor safe = where(eq(scale, 0.0), 1.0, scale);
  return {cast(clamp(round(w / safe.unsqueeze(1)), Scalar(-127.0), Scalar(127.0)), DType::I8), scale};
}

QuantizedInt4 quantize_int4(const Tensor& weight, int64_t group_size) {
  check_weight("quantize_int4", weight);
  const int64_t n = weight.size(0), k = weight.size(1), g = group_size;
  check_group("quantize_int4", g, k);
  NoGradGuard ng;
  if (k == 0)
    return {empty({n, 0}, {DType::U8, weight.device()}), zeros({n, 0}, {DType::F32, weight.device()}),
            empty({n, 0}, {DType::U8, weight.device()}), g};
  Tensor w = cast(weight, DType::F32).reshape({n, k / g, g});
  Tensor lo = minimum(amin(w, {-1}), 0.0), hi = maximum(amax(w, {-1}), 0.0);
  Tensor scale = (hi - lo) / 15.0;
  Tensor safe = where(eq(scale, 0.0), 1.0, scale);
  Tensor zero = clamp(round(neg(lo) / safe), Scalar(0.0), Scalar(15.0));
  Tensor q = clamp(round(w / safe.unsqueeze(-1)) + zero.unsqueeze(-1), Scalar(0.0), Scalar(15.0)).reshape({n, k / 2, 2});
  Tensor packed = cast(q.select(-1, 0) + q.select(-1, 1) * 16.0, DType::U8);
  return {packed, scale, cast(zero, DType::U8), g};
}

Tensor dequantize(const QuantizedInt8& w) {
  require_matrix("dequantize", w.values, DType::I8, "the weight values");
  check_part("dequantize", w.scale, {w.values.size(0)}, kFloatDTypes, "the scale", "floating");
  return dequant8(w.values, w.scale, DType::F32);
}

Tensor dequantize(const QuantizedInt4& w) {
  require_matrix("dequantize", w.values, DType::U8, "the packed weight values");
  const int64_t n = w.values.size(0), k = 2 * w.values.size(1), g = w.group_size;
  check_group("dequantize", g, k);
  check_part("dequantize", w.scale, {n, k / g}, kFloatDTypes, "the scale", "floating");
  check_part("dequantize", w.zero, {n, k / g}, mask_of(DType::U8), "the zero points", "uint8");
  return dequant4(w.values, w.scale, w.zero, g, DType::F32);
}

Tensor linear_int8(const Tensor& x, const Tensor& values, const Tensor& scale, const Tensor& bias) {
  return dispatch1(OpId::linear_int8, {}, {x, values, scale, bias});
}

Tensor linear_int4(const Tensor& x, const Tensor& values, const Tensor& scale, const Tensor& zero,
                   int64_t group_size, const Tensor& bias) {
  Attrs a;
  a.i[0] = group_size;
  return dispatch1(OpId::linear_int4, a, {x, values, scale, zero, bias});
}

Tensor linear(const Tensor& x, const QuantizedInt8& w, const Tensor& bias) {
  return linear_int8(x, w.values, w.scale, bias);
}

Tensor linear(const Tensor& x, const QuantizedInt4& w, const Tensor& bias) {
  return linear_int4(x, w.values, w.scale, w.zero, w.group_size, bias);
}

namespace ops {
void register_quant_ops() {
  op_def_mut(OpId::linear_int8).infer = infer_quant;
  op_def_mut(OpId::linear_int4).infer = infer_quant;
  op_def_mut(OpId::linear_int8).decompose = decompose_int8;
  op_def_mut(OpId::linear_int4).decompose = decompose_int4;
}
}  // namespace ops

}  // namespace ember

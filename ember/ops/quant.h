#pragma once
// Weight-only quantization for inference: the schemes, and the products that read quantized
// weights directly.
//
// int8: symmetric, one scale per output row: scale = absmax(row) / 127, q = round(w / scale)
//       clamped to [-127, 127] (i8); w ~ q * scale.
// int4: asymmetric, one scale and one zero point per group of `group_size` consecutive input
//       elements of a row: lo = min(group, 0), hi = max(group, 0), scale = (hi - lo) / 15,
//       zero = round(-lo / scale) in [0, 15], q = clamp(round(w / scale) + zero, 0, 15);
//       w ~ (q - zero) * scale. Two values share a byte along the input dim: element 2j of a
//       row in the low nibble of byte j, element 2j + 1 in the high nibble.
// Rounding is to nearest, ties to even (torch.round). A row or group of zeros gets scale 0.
#include "ember/tensor.h"

namespace ember {

/// int8 weights: values i8 [out, in], scale f32 [out].
struct QuantizedInt8 {
  Tensor values, scale;
};
/// int4 weights: values u8 [out, in / 2] (two per byte), scale f32 and zero u8, both
/// [out, in / group_size].
struct QuantizedInt4 {
  Tensor values, scale, zero;
  int64_t group_size = 0;
};

/// Quantizes a floating 2-D weight [out, in] to int8 with one scale per row.
QuantizedInt8 quantize_int8(const Tensor& weight);
/// Quantizes a floating 2-D weight [out, in] to int4 in groups of `group_size` (positive, even,
/// dividing in; 32 and 128 are the usual choices) along each row.
QuantizedInt4 quantize_int4(const Tensor& weight, int64_t group_size);
/// The f32 weight [out, in] the quantized values stand for.
Tensor dequantize(const QuantizedInt8& w);
Tensor dequantize(const QuantizedInt4& w);

/// x @ (values * scale[:, None])^T + bias for int8 weights, without materialising the float
/// weight (x: f32, f16 or bf16 [..., in]; the result has x's dtype; bias [out] optional).
Tensor linear_int8(const Tensor& x, const Tensor& values, const Tensor& scale,
                   const Tensor& bias = {});
/// linear_int8 for int4 weights (values u8 [out, in / 2], scale/zero [out, in / group_size]).
Tensor linear_int4(const Tensor& x, const Tensor& values, const Tensor& scale, const Tensor& zero,
                   int64_t group_size, const Tensor& bias = {});
/// The product for either kind of quantized weight.
Tensor linear(const Tensor& x, const QuantizedInt8& w, const Tensor& bias = {});
Tensor linear(const Tensor& x, const QuantizedInt4& w, const Tensor& bias = {});

}  // namespace ember

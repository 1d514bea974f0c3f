#pragma once
// Shared by ember/vision's transform sources (private).
#include "ember/tensor.h"

namespace ember::vision::detail {

/// An image [..., C, H, W] or [H, W] viewed as [B, C, H, W], and back.
struct Batched {
  Tensor x;
  Shape shape;
  /// `y` [B, C', H', W'] reshaped to the input's leading dims.
  Tensor restore(const Tensor& y) const;
};
Batched batched(const Tensor& img, const char* op);
/// f32 for integer images, else the image itself.
Tensor to_compute(const Tensor& x);
/// Back to `dtype`: integers are rounded (and, with clamp_u8, clamped to 0..255) first.
Tensor from_compute(const Tensor& y, DType dtype, bool clamp_u8);

}  // namespace ember::vision::detail

#pragma once
// View geometry shared by inference and every strided backend's view kernels (private).
#include "ember/ops/registry.h"

namespace ember::ops {

struct Geometry {
  Shape shape, strides;
  int64_t offset = 0;
  bool needs_copy = false;  // reshape of a layout no view can express
};

/// The geometry `op` (a view op) gives `x`; throws the op's errors on bad attributes.
Geometry view_geometry(OpId op, const Attrs& a, const Tensor& x);
/// Resolves one -1 in `shape` against numel; throws ShapeError naming `op`.
Shape infer_size(const Shape& shape, int64_t numel, const char* op);
/// Strides for viewing (shape, strides) as `to`, or empty when impossible without a copy.
std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& to);

}  // namespace ember::ops

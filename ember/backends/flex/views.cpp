// flex kernels for view ops: geometry only, storage is shared.
#include "ember/backends/flex/flex.h"
#include "ember/ops/layout.h"
#include "ember/ops/views.h"

namespace ember::flex {
namespace {

TensorList k_view(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  ops::Geometry g = ops::view_geometry(c.op, c.attrs, x);
  if (g.needs_copy) {
    Tensor y = contiguous(x);
    return {detail::make_view(y, g.shape, g.strides, y.offset())};
  }
  return {detail::make_view(x, std::move(g.shape), std::move(g.strides), g.offset)};
}

// view_as_real / view_as_complex: the same bytes as pairs of reals or as complex elements
// (inference checked the strides).
TensorList k_view_as(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  Shape shape = x.shape(), strides = x.strides();
  int64_t offset = x.offset();
  if (c.op == OpId::view_as_real) {
    for (int64_t& s : strides) s *= 2;
    shape.push_back(2);
    strides.push_back(1);
    offset *= 2;
  } else {
    shape = Shape(std::span<const int64_t>(shape.data(), shape.size() - 1));
    strides = Shape(std::span<const int64_t>(strides.data(), strides.size() - 1));
    for (int64_t& s : strides) s /= 2;
    offset /= 2;
  }
  Tensor y = detail::make_view(x, std::move(shape), std::move(strides), offset);
  y.impl()->dtype = c.meta.m[0].dtype;
  return {y};
}

}  // namespace

void register_flex_views(BackendImpl& b) {
  for (OpId op : {OpId::reshape, OpId::view, OpId::flatten, OpId::unflatten, OpId::permute,
                  OpId::transpose, OpId::movedim, OpId::squeeze, OpId::unsqueeze, OpId::expand,
                  OpId::broadcast_to, OpId::slice, OpId::select, OpId::narrow, OpId::diagonal})
    b.set_kernel(op, k_view, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::view_as_real, k_view_as, kComplexDTypes);
  b.set_kernel(OpId::view_as_complex, k_view_as, mask_of(DType::F32) | mask_of(DType::F64));
}

}  // namespace ember::flex

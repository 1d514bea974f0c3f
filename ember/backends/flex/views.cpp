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

}  // namespace

void register_flex_views(BackendImpl& b) {
  for (OpId op : {OpId::reshape, OpId::view, OpId::flatten, OpId::unflatten, OpId::permute,
                  OpId::transpose, OpId::movedim, OpId::squeeze, OpId::unsqueeze, OpId::expand,
                  OpId::broadcast_to, OpId::slice, OpId::select, OpId::narrow, OpId::diagonal})
    b.set_kernel(op, k_view, kAllDTypes);
}

}  // namespace ember::flex

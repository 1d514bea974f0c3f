// connected_components: API, inference, registration. Input a 2-D image (any dtype, nonzero =
// foreground). Attrs: i[0] connectivity (4 or 8). Outputs labels int32 [H, W], stats int64
// [K + 1, 5] and centroids float64 [K + 1, 2], K (the count) known once the kernel has run.
#include "ember/vision/components.h"

#include <string>

#include "ember/ops/common.h"

namespace ember {
namespace {

void infer_components(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  const Tensor& x = in[0];
  ops::require_defined(x, name, "image");
  if (x.dim() != 2)
    detail::throw_shape(name, "expected a 2-D [H, W] image, found shape " + shape_str(x.shape()));
  if (x.numel() >= (int64_t(1) << 31))
    detail::throw_shape(name, "image of " + std::to_string(x.numel()) +
                                  " pixels: int32 labels hold at most 2^31 - 1");
  if (a.i[0] != 4 && a.i[0] != 8)
    detail::throw_value(name, "connectivity must be 4 or 8, found " + std::to_string(a.i[0]));
  out.add(x.shape(), DType::I32);
  out.add({-1, 5}, DType::I64);
  out.add({-1, 2}, DType::F64);
}

}  // namespace

namespace vision {
Components connected_components(const Tensor& image, int connectivity) {
  Attrs a;
  a.i[0] = connectivity;
  TensorList r = dispatch(OpId::connected_components, a, {image});
  Components c{r[0], r[1], r[2], 0};
  c.count = c.stats.size(0) - 1;
  return c;
}
}  // namespace vision

namespace ops {
void register_component_ops() {
  op_def_mut(OpId::connected_components).infer = infer_components;
  op_def_mut(OpId::connected_components).differentiable = false;
}
}  // namespace ops

}  // namespace ember

#pragma once
// Convolution geometry shared by inference and every backend's conv / unfold / fold kernels
// (private). Spatial quantities are right-aligned into three slots (depth, height, width): a
// conv1d uses only the last slot, a conv2d the last two; unused slots hold size 1, stride 1,
// padding 0, dilation 1.
#include <array>

#include "ember/ops/registry.h"

namespace ember::ops {

struct ConvGeometry {
  using Dims = std::array<int64_t, 3>;
  int nsp = 2;          // spatial dims of the op
  bool batched = true;  // the input had a batch dim (the output keeps it)
  int64_t n = 1;        // batch size
  int64_t c_in = 0;     // input channels (all groups); unfold/fold: the image's channels
  int64_t c_out = 0;    // output channels (all groups); unfold/fold: c_in
  int64_t groups = 1;
  // conv: in -> out spatial sizes. conv_transpose: in is the (small) input, out the result.
  // unfold / fold: in is the image, out the grid of sliding blocks.
  Dims in{1, 1, 1}, out{1, 1, 1};
  Dims kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
  /// Products of the used slots.
  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_numel() const { return kernel[0] * kernel[1] * kernel[2]; }
};

/// The conv / conv_transpose op of `nsp` spatial dims.
inline OpId conv_op(int nsp) {
  return nsp == 1 ? OpId::conv1d : nsp == 2 ? OpId::conv2d : OpId::conv3d;
}
inline OpId conv_transpose_op(int nsp) {
  return nsp == 1 ? OpId::conv_transpose1d : OpId::conv_transpose2d;
}
/// The used (last nsp) slots of a right-aligned geometry triple, and the slot of spatial dim i.
inline Shape used_dims(const ConvGeometry::Dims& v, int nsp) {
  return Shape(std::span<const int64_t>(v.data() + (3 - nsp), size_t(nsp)));
}
inline size_t dim_slot(int nsp, int i) { return size_t(3 - nsp + i); }
/// Whether `t` ([N, C, spatial...], 3-d to 5-d) is packed channels-last (NWC, NHWC or NDHWC
/// memory: channels innermost) and not also plain contiguous.
bool channels_last(const Tensor& t);
/// An uninitialised tensor of `shape` ([N, C, spatial...]) packed channels-last.
Tensor empty_channels_last(const Shape& shape, DType dtype, Device device);
/// A geometry attr (one value, or one per spatial dim) right-aligned into three slots, `fill`
/// in the unused ones; each value at least `min` (throws op's ValueError otherwise).
ConvGeometry::Dims spread(const char* op, std::span<const int64_t> v, int nsp, const char* what,
                          int64_t fill, int64_t min);
/// A conv call's attrs: ints2 stride, ints3 padding, ints4 dilation, i[0] groups.
Attrs conv_attrs(const Shape& stride, const Shape& pad, const Shape& dilation, int64_t groups);

/// Validates a conv*/conv_transpose*/unfold/fold call (throwing the op's errors) and computes
/// its geometry. Padding is the leading (top/left) padding; "same" pads any odd remainder at the
/// end, as torch does.
ConvGeometry conv_geometry(OpId op, const Attrs& a, std::span<const Tensor> in);
/// The output shape of the call described by `g`.
Shape conv_output_shape(OpId op, const ConvGeometry& g);

/// conv_input_grad(gy, w) and conv_weight_grad(x, gy): the gradients of y = conv(x, w) for the
/// input and the weight from y's cotangent gy (batched: [N, C, spatial...]), as ops so that a
/// backend may run them as one library call (cuDNN's backward data / filter). Their attrs
/// carry the geometry: ints the input's spatial sizes (input grad) or the kernel's (weight grad),
/// ints2 stride, ints3 leading padding, ints4 dilation (one value per spatial dim each), i[0]
/// groups. `g` (batched) describes the convolution; `g.in` and `g.out` are the spatial sizes of
/// x and gy.
Attrs conv_grad_attrs(OpId op, const ConvGeometry& g);
/// The convolution a conv_input_grad / conv_weight_grad call differentiates, checked (throwing
/// the op's errors).
ConvGeometry conv_grad_geometry(OpId op, const Attrs& a, std::span<const Tensor> in);

}  // namespace ember::ops

// Convolution, transposed convolution, unfold (im2col) and fold (col2im): API, geometry,
// inference, registration.
// Attrs: conv1d/2d/3d: inputs {x, w, bias (may be undefined)}, ints2 stride, ints3 padding,
//   ints4 dilation, i[0] groups, mode = ops::ConvPadding.
// conv_transpose1d/2d: inputs {x, w, bias}, ints2 stride, ints3 padding, ints4 dilation,
//   ints output_padding, i[0] groups.
// unfold: ints kernel_size, ints2 stride, ints3 padding, ints4 dilation.
// fold: as unfold, plus i[0], i[1] output_size and i[2] how many of them were given (1 or 2).
// Spatial lists hold one value (used for every spatial dim) or one per spatial dim.
#include "ember/ops/conv.h"

#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/ops/modes.h"
#include "ember/ops/nn.h"
#include "ember/tensor_impl.h"

namespace ember::ops {

// One value per used slot, right-aligned into three; `fill` stays in the unused slots.
ConvGeometry::Dims spread(const char* op, std::span<const int64_t> v, int nsp, const char* what,
                          int64_t fill, int64_t min) {
  if (v.size() != 1 && v.size() != size_t(nsp))
    detail::throw_value(op, "expected 1 or " + std::to_string(nsp) + " values for " + what +
                                ", found " + shape_str(v));
  ConvGeometry::Dims d{fill, fill, fill};
  for (int i = 0; i < nsp; ++i) {
    int64_t x = v.size() == 1 ? v[0] : v[size_t(i)];
    if (x < min)
      detail::throw_value(op, std::string(what) + " must be " +
                                  (min ? "positive" : "non-negative") + ", found " + shape_str(v));
    d[size_t(3 - nsp + i)] = x;
  }
  return d;
}

namespace {

int spatial_dims(OpId op) {
  switch (op) {
    case OpId::conv1d:
    case OpId::conv_transpose1d:
      return 1;
    case OpId::conv3d:
      return 3;
    default:
      return 2;
  }
}

std::string dims_str(const ConvGeometry::Dims& d, int nsp) {
  return shape_str(std::span<const int64_t>(d.data() + 3 - nsp, size_t(nsp)));
}

void check_rank(const char* op, const Tensor& x, int nsp, const char* what) {
  if (x.dim() != nsp + 1 && x.dim() != nsp + 2)
    detail::throw_shape(op, "expected a " + std::to_string(nsp + 1) + "-D (unbatched) or " +
                                std::to_string(nsp + 2) + "-D (batched) " + what +
                                ", found shape " + shape_str(x.shape()));
}

// The product of three spatial sizes must stay a valid tensor extent (see check_shape), so
// in_numel(), out_numel() and kernel_numel() cannot overflow.
void check_dims(const char* op, const ConvGeometry::Dims& d, const char* what) {
  int64_t n = 1;
  for (int64_t v : d)
    if (__builtin_mul_overflow(n, v, &n) || n > kMaxNumel)
      detail::throw_value(op, std::string(what) + " " + shape_str(d) + " is too large");
}

// The dilated kernel's span and the padded input's size in spatial slot s, checked: every term
// comes from the user, and kernels index with them.
std::pair<int64_t, int64_t> span_and_padded(const char* op, const ConvGeometry& g, int s) {
  int64_t span = checked_add(
      checked_mul(g.dilation[size_t(s)], g.kernel[size_t(s)] - 1, op, "dilation * (kernel - 1)"), 1,
      op, "the dilated kernel");
  int64_t padded = checked_add(g.in[size_t(s)], checked_mul(2, g.pad[size_t(s)], op, "padding"), op,
                               "the padded input");
  return {span, padded};
}

// Sliding-block geometry (conv, unfold, fold): blocks per dim of `in` padded by pad.
void sliding_blocks(const char* op, ConvGeometry& g) {
  for (int s = 3 - g.nsp; s < 3; ++s) {
    auto [span, padded] = span_and_padded(op, g, s);
    if (padded < span)
      detail::throw_shape(op, "padded input size " + dims_str(g.in, g.nsp) + " + 2 * padding " +
                                  dims_str(g.pad, g.nsp) + " is smaller than the dilated kernel " +
                                  dims_str(g.kernel, g.nsp) + " (dilation " +
                                  dims_str(g.dilation, g.nsp) + ")");
    g.out[size_t(s)] = (padded - span) / g.stride[size_t(s)] + 1;
  }
}

ConvGeometry blocks_geometry(OpId op, const Attrs& a, std::span<const Tensor> in) {
  const char* name = op_name(op);
  ConvGeometry g;
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  const Tensor& x = in[0];
  require_defined(x, name);
  require_dtype(name, x.dtype(), kNumericDTypes, "a numeric dtype (bool is not supported)");
  g.kernel = spread(name, a.ints, 2, "kernel_size", 1, 1);
  g.stride = spread(name, a.ints2, 2, "stride", 1, 1);
  g.pad = spread(name, a.ints3, 2, "padding", 0, 0);
  g.dilation = spread(name, a.ints4, 2, "dilation", 1, 1);
  check_dims(name, g.kernel, "kernel_size");
  const int64_t kk = g.kernel_numel();
  if (op == OpId::unfold) {
    if (x.dim() != 3 && x.dim() != 4)
      detail::throw_shape(name, "expected a 3-D (unbatched) or 4-D (batched) input, found shape " +
                                    shape_str(x.shape()));
    g.batched = x.dim() == 4;
    g.n = g.batched ? x.size(0) : 1;
    g.c_in = g.c_out = x.size(-3);
    g.in = {1, x.size(-2), x.size(-1)};
    sliding_blocks(name, g);
    return g;
  }
  if (x.dim() != 2 && x.dim() != 3)
    detail::throw_shape(name, "expected a 2-D (unbatched) or 3-D (batched) input, found shape " +
                                  shape_str(x.shape()));
  const int64_t count = a.i[2] ? a.i[2] : 2;
  const int64_t sizes[2] = {a.i[0], count == 1 ? a.i[0] : a.i[1]};
  g.in = spread(name, std::span<const int64_t>(sizes, 2), 2, "output_size", 1, 1);
  check_dims(name, g.in, "output_size");
  g.batched = x.dim() == 3;
  g.n = g.batched ? x.size(0) : 1;
  if (x.size(-2) % kk)
    detail::throw_shape(name, "expected the input's dim " + std::to_string(x.dim() - 2) +
                                  " to be divisible by the kernel's " + std::to_string(kk) +
                                  " elements, found shape " + shape_str(x.shape()));
  g.c_in = g.c_out = x.size(-2) / kk;
  sliding_blocks(name, g);
  check_dims(name, g.out, "the grid of sliding blocks");
  if (x.size(-1) != g.out_numel())
    detail::throw_shape(name, "output_size " + dims_str(g.in, 2) + " gives " + dims_str(g.out, 2) +
                                  " = " + std::to_string(g.out_numel()) +
                                  " sliding blocks, but the input's last dim is " +
                                  std::to_string(x.size(-1)));
  return g;
}

}  // namespace

ConvGeometry conv_geometry(OpId op, const Attrs& a, std::span<const Tensor> in) {
  if (op == OpId::unfold || op == OpId::fold) return blocks_geometry(op, a, in);
  const char* name = op_name(op);
  const bool transposed = op == OpId::conv_transpose1d || op == OpId::conv_transpose2d;
  ConvGeometry g;
  g.nsp = spatial_dims(op);
  if (in.size() != 3) detail::throw_value(name, "expected inputs (input, weight, bias)");
  const Tensor &x = in[0], &w = in[1], &bias = in[2];
  require_defined(x, name, "the input");
  require_defined(w, name, "the weight");
  if (x.dtype() != w.dtype() || (bias.defined() && bias.dtype() != x.dtype()))
    detail::throw_dtype(
        name, "expected input, weight and bias of one dtype, found " +
                  std::string(dtype_name(x.dtype())) + ", " + std::string(dtype_name(w.dtype())) +
                  (bias.defined() ? ", " + std::string(dtype_name(bias.dtype())) : ""));
  require_dtype(name, x.dtype(), kNumericDTypes, "a numeric dtype (bool is not supported)");
  check_rank(name, x, g.nsp, "input");
  if (w.dim() != g.nsp + 2)
    detail::throw_shape(name, "expected a " + std::to_string(g.nsp + 2) +
                                  "-D weight, found shape " + shape_str(w.shape()));
  g.groups = a.i[0];
  if (g.groups <= 0)
    detail::throw_value(name, "groups must be positive, found " + std::to_string(g.groups));
  g.stride = spread(name, a.ints2, g.nsp, "stride", 1, 1);
  g.pad = spread(name, a.ints3, g.nsp, "padding", 0, 0);
  g.dilation = spread(name, a.ints4, g.nsp, "dilation", 1, 1);
  g.batched = x.dim() == g.nsp + 2;
  const int64_t off = g.batched ? 1 : 0;
  g.n = g.batched ? x.size(0) : 1;
  g.c_in = x.size(off);
  for (int i = 0; i < g.nsp; ++i) {
    g.in[size_t(3 - g.nsp + i)] = x.size(off + 1 + i);
    g.kernel[size_t(3 - g.nsp + i)] = w.size(2 + i);
  }
  for (int i = 0; i < g.nsp; ++i)
    if (w.size(2 + i) == 0)
      detail::throw_shape(name, "expected a kernel of positive sizes, found weight of shape " +
                                    shape_str(w.shape()));
  if (w.size(0) == 0 || w.size(0) % g.groups)
    detail::throw_shape(name, "expected the weight's dim 0 to be a positive multiple of groups=" +
                                  std::to_string(g.groups) + ", found weight of shape " +
                                  shape_str(w.shape()));
  if (!transposed) {
    if (g.c_in != w.size(1) * g.groups)
      detail::throw_shape(
          name, "weight of shape " + shape_str(w.shape()) + " with groups=" +
                    std::to_string(g.groups) + " expects " + std::to_string(w.size(1) * g.groups) +
                    " input channels, found input of shape " + shape_str(x.shape()));
    g.c_out = w.size(0);
    const auto padding = ops::mode_of(name, a.mode, ops::ConvPadding::Valid);
    if (padding == ops::ConvPadding::Valid) {
      g.pad = {0, 0, 0};
    } else if (padding == ops::ConvPadding::Same) {
      for (int s = 3 - g.nsp; s < 3; ++s) {
        if (g.stride[size_t(s)] != 1)
          detail::throw_value(name, "padding='same' is not supported for strided convolutions");
        g.pad[size_t(s)] =
            checked_mul(g.dilation[size_t(s)], g.kernel[size_t(s)] - 1, name, "padding") / 2;
      }
    }
    if (padding == ops::ConvPadding::Same) {
      for (int s = 3 - g.nsp; s < 3; ++s) span_and_padded(name, g, s);  // overflow checks only
      g.out = g.in;  // an odd total padding puts the extra at the end
    } else {
      sliding_blocks(name, g);
    }
  } else {
    if (g.c_in != w.size(0))
      detail::throw_shape(name, "weight of shape " + shape_str(w.shape()) + " expects " +
                                    std::to_string(w.size(0)) +
                                    " input channels, found input of shape " +
                                    shape_str(x.shape()));
    g.c_out = w.size(1) * g.groups;
    auto out_pad = spread(name, a.ints, g.nsp, "output_padding", 0, 0);
    for (int s = 3 - g.nsp; s < 3; ++s) {
      const size_t i = size_t(s);
      if (out_pad[i] >= std::max(g.stride[i], g.dilation[i]))
        detail::throw_value(name, "output_padding " + dims_str(out_pad, g.nsp) +
                                      " must be smaller than stride " + dims_str(g.stride, g.nsp) +
                                      " or dilation " + dims_str(g.dilation, g.nsp));
      // (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_padding + 1, checked
      // step by step: every term comes from the user.
      const char* w_ = "the output size";
      int64_t grown = checked_mul(g.in[i] - 1, g.stride[i], name, w_);
      int64_t reach = checked_mul(g.dilation[i], g.kernel[i] - 1, name, w_);
      int64_t o = checked_add(checked_add(grown, reach, name, w_), out_pad[i] + 1, name, w_);
      g.out[i] = checked_add(o, -checked_mul(2, g.pad[i], name, "padding"), name, w_);
      if (g.out[i] <= 0)
        detail::throw_shape(name, "input of shape " + shape_str(x.shape()) +
                                      " gives a non-positive output size with padding " +
                                      dims_str(g.pad, g.nsp));
    }
  }
  check_dims(name, g.out, "the output size");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != g.c_out))
    detail::throw_shape(name, "expected a 1-D bias of " + std::to_string(g.c_out) +
                                  " elements, found shape " + shape_str(bias.shape()));
  return g;
}

Shape conv_output_shape(OpId op, const ConvGeometry& g) {
  Shape s;
  if (g.batched) s.push_back(g.n);
  if (op == OpId::unfold) {
    s.push_back(g.c_in * g.kernel_numel());
    s.push_back(g.out_numel());
    return s;
  }
  s.push_back(g.c_out);
  const auto& sp = op == OpId::fold ? g.in : g.out;
  for (int i = 3 - g.nsp; i < 3; ++i) s.push_back(sp[size_t(i)]);
  return s;
}

// [N, C, spatial...] -> [N, spatial..., C].
namespace {
Shape last_order(int64_t nd) {
  Shape p = {0};
  for (int64_t i = 2; i < nd; ++i) p.push_back(i);
  p.push_back(1);
  return p;
}
}  // namespace

bool channels_last(const Tensor& t) {
  if (t.dim() < 3 || t.dim() > 5 || t.is_contiguous()) return false;
  return t.permute(last_order(t.dim())).is_contiguous();
}

Tensor empty_channels_last(const Shape& shape, DType dtype, Device device) {
  // The strides made here rather than by a permute (an op: dispatch, inference): planners call
  // this once per value and run.
  const size_t nd = shape.size();
  Shape strides(nd);
  int64_t st = 1;
  strides[1] = st, st *= shape[1];
  for (size_t i = nd; i-- > 2;) strides[i] = st, st *= shape[i];
  strides[0] = st;
  return detail::make_view(detail::empty_tensor({numel_of(shape)}, dtype, device), shape,
                           std::move(strides), 0);
}

namespace {

void infer_conv(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  ConvGeometry g = conv_geometry(op, a, in);
  out.add(conv_output_shape(op, g), in[0].dtype());
}

}  // namespace

void register_conv_ops() {
  for (OpId op : {OpId::conv1d, OpId::conv2d, OpId::conv3d, OpId::conv_transpose1d,
                  OpId::conv_transpose2d, OpId::unfold, OpId::fold})
    op_def_mut(op).infer = infer_conv;
}

}  // namespace ember::ops

namespace ember {
namespace {

Tensor conv(OpId op, const Tensor& x, const Tensor& w, const Tensor& bias, const ConvOptions& o) {
  Attrs a;
  a.ints2 = o.stride;
  a.ints3 = o.padding;
  a.ints4 = o.dilation;
  a.i[0] = o.groups;
  a.mode = uint8_t(ops::parse_conv_padding(op_name(op), o.padding_mode));
  return dispatch1(op, a, {x, w, bias});
}

Tensor conv_t(OpId op, const Tensor& x, const Tensor& w, const Tensor& bias,
              const ConvTransposeOptions& o) {
  Attrs a;
  a.ints2 = o.stride;
  a.ints3 = o.padding;
  a.ints4 = o.dilation;
  a.ints = o.output_padding;
  a.i[0] = o.groups;
  return dispatch1(op, a, {x, w, bias});
}

Attrs blocks(const Shape& kernel_size, const Shape& dilation, const Shape& padding,
             const Shape& stride) {
  Attrs a;
  a.ints = kernel_size;
  a.ints2 = stride;
  a.ints3 = padding;
  a.ints4 = dilation;
  return a;
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvOptions& o) {
  return conv(OpId::conv1d, x, w, bias, o);
}
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvOptions& o) {
  return conv(OpId::conv2d, x, w, bias, o);
}
Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvOptions& o) {
  return conv(OpId::conv3d, x, w, bias, o);
}
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvTransposeOptions& o) {
  return conv_t(OpId::conv_transpose1d, x, w, bias, o);
}
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvTransposeOptions& o) {
  return conv_t(OpId::conv_transpose2d, x, w, bias, o);
}

Tensor unfold(const Tensor& x, const Shape& kernel_size, const Shape& dilation,
              const Shape& padding, const Shape& stride) {
  return dispatch1(OpId::unfold, blocks(kernel_size, dilation, padding, stride), {x});
}

Tensor fold(const Tensor& x, const Shape& output_size, const Shape& kernel_size,
            const Shape& dilation, const Shape& padding, const Shape& stride) {
  Attrs a = blocks(kernel_size, dilation, padding, stride);
  if (output_size.size() != 1 && output_size.size() != 2)
    detail::throw_value("fold",
                        "expected 1 or 2 values for output_size, found " + shape_str(output_size));
  a.i[0] = output_size[0];
  a.i[1] = output_size.size() == 2 ? output_size[1] : output_size[0];
  a.i[2] = int64_t(output_size.size());
  return dispatch1(OpId::fold, a, {x});
}

}  // namespace ember

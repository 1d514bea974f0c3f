// conv_input_grad and conv_weight_grad: the two gradients of a convolution as ops (geometry,
// inference, and decompositions into forward ops that every backend runs). The VJP rules of
// conv* and conv_transpose* dispatch them; a backend with a library for them (cuDNN's backward
// data and backward filter) serves them in one call, the others run the decompositions below.
// They have no VJP rule of their own: a second-order gradient records through the
// decomposition. With y = conv(x, w) (stride s, leading padding p, dilation d, groups):
// - x's gradient is the adjoint of the convolution: conv_transpose of the cotangent with the
//   same weight (its output_padding picks the input size back), or a correlation of the
//   (stride-dilated) cotangent with the flipped, group-transposed weight.
// - w's gradient correlates the padded input with the cotangent: unfold(x) times the cotangent
//   (1-d, 2-d), or a convolution with batch and channels swapped, stride d and dilation s (3-d).
#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/ops/conv.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"

namespace ember::ops {

Attrs conv_attrs(const Shape& stride, const Shape& pad, const Shape& dilation, int64_t groups) {
  Attrs a;
  a.ints2 = stride;
  a.ints3 = pad;
  a.ints4 = dilation;
  a.i[0] = groups;
  return a;
}

namespace {

using Dims = ConvGeometry::Dims;

// Torch-style pad list (pairs from the last dim backwards) for the spatial dims.
Tensor pad_spatial(const Tensor& t, const Shape& left, const Shape& right) {
  Shape pads;
  bool any = false;
  for (size_t i = left.size(); i-- > 0;) {
    pads.push_back(left[i]);
    pads.push_back(right[i]);
    any = any || left[i] != 0 || right[i] != 0;
  }
  return any ? pad(t, pads) : t;
}

// Inserts s - 1 zeros between neighbours along dim: length L becomes (L - 1) * s + 1.
Tensor dilate(const Tensor& t, int64_t dim, int64_t s) {
  if (s == 1 || t.size(dim) == 0) return t;
  const Tensor u = t.unsqueeze(dim + 1);
  Shape zs = u.shape();
  zs[size_t(dim + 1)] = s - 1;
  Shape merged = t.shape();
  merged[size_t(dim)] *= s;
  const Tensor spread = cat({u, zeros(zs, {t.dtype(), t.device()})}, dim + 1).reshape(merged);
  return spread.narrow(dim, 0, (t.size(dim) - 1) * s + 1);
}

// [O, C/G, k...] -> [C, O/G, k...]: each group's weight transposed (in and out channels swap).
Tensor swap_group_channels(const Tensor& w, int64_t groups) {
  Shape split = {groups, w.size(0) / groups}, out = {w.size(1) * groups, w.size(0) / groups};
  for (int64_t d = 1; d < w.dim(); ++d) split.push_back(w.size(d));
  for (int64_t d = 2; d < w.dim(); ++d) out.push_back(w.size(d));
  return w.reshape(split).transpose(1, 2).reshape(out);
}

// Gradient of the weight [Cg, Cx/G, k...] from x [N, Cx, in...] and gy [N, Cg, out...]:
// w'[o, c, k] = sum_{n,t} gy[n, o, t] xpad[n, c, t*s + k*d]. 1-d and 2-d: unfold x and multiply
// by gy per (sample, group), then sum over samples. 3-d (no 3-d unfold): a convolution of x with
// gy as the kernel, batch and channels swapped, stride d and dilation s. The unfold route is
// about 3x faster on flex, which is why both exist.
Tensor weight_grad(const Tensor& x, const Tensor& gy, const ConvGeometry& g) {
  const int nsp = g.nsp;
  const Dims &in = g.in, &out = g.out;
  const int64_t n = x.size(0), cx = x.size(1), cg = gy.size(1), groups = g.groups;
  Shape wshape = {cg, cx / groups};
  for (int i = 0; i < nsp; ++i) wshape.push_back(g.kernel[dim_slot(nsp, i)]);
  if (n == 0) return zeros(wshape, {x.dtype(), x.device()});
  // The windows' own padding reproduces exactly `out` windows unless the padding is asymmetric
  // ("same") or x has room for more windows (a transposed conv's output_padding); then pad or
  // crop x to exactly the span the windows read.
  bool exact = true;
  Shape left, right;
  for (int i = 0; i < nsp; ++i) {
    const size_t j = dim_slot(nsp, i);
    const int64_t span = (g.kernel[j] - 1) * g.dilation[j] + 1;
    const int64_t needed = (out[j] - 1) * g.stride[j] + span;
    exact = exact && (in[j] + 2 * g.pad[j] - span) / g.stride[j] + 1 == out[j];
    left.push_back(g.pad[j]);
    right.push_back(needed - in[j] - g.pad[j]);
  }
  const Tensor xp = exact && nsp < 3 ? x : pad_spatial(x, left, right);
  if (nsp < 3) {
    // 1-d runs as 2-d with a unit height.
    const Tensor x4 = nsp == 1 ? xp.unsqueeze(2) : xp;
    Attrs a;
    for (int s = 1; s < 3; ++s) {
      const bool live = s >= 3 - nsp;
      a.ints.push_back(live ? g.kernel[size_t(s)] : 1);
      a.ints2.push_back(live ? g.stride[size_t(s)] : 1);
      a.ints3.push_back(live && exact ? g.pad[size_t(s)] : 0);
      a.ints4.push_back(live ? g.dilation[size_t(s)] : 1);
    }
    const Tensor cols = dispatch1(OpId::unfold, a, {x4});  // [N, Cx*K, L]
    const int64_t l = cols.size(2);
    const Tensor prod = matmul(gy.reshape({n, groups, cg / groups, l}),
                               cols.reshape({n, groups, -1, l}).transpose(2, 3));
    return sum(prod, {0}).reshape(wshape);
  }
  Shape xs = {n, groups, cx / groups}, xm = {cx / groups, groups * n}, perm = {2, 1, 0};
  Shape gs = {n, groups, cg / groups}, gm = {cg, n}, gperm = {1, 2, 0};
  for (int i = 0; i < nsp; ++i) {
    xs.push_back(xp.size(2 + i)), xm.push_back(xp.size(2 + i)), perm.push_back(3 + i);
    gs.push_back(gy.size(2 + i)), gm.push_back(gy.size(2 + i)), gperm.push_back(3 + i);
  }
  const Tensor xsw = xp.reshape(xs).permute(perm).reshape(xm);   // [Cx/G, G*N, in...]
  const Tensor gsw = gy.reshape(gs).permute(gperm).reshape(gm);  // [Cg, N, out...]
  Attrs a = conv_attrs(used_dims(g.dilation, nsp), Shape{0}, used_dims(g.stride, nsp), groups);
  return dispatch1(conv_op(nsp), a, {xsw, gsw, Tensor()}).transpose(0, 1).contiguous();
}

// Gradient of x [N, C, in...] from gy [N, O, out...] and w [O, C/G, k...].
Tensor input_grad(const Tensor& gy, const Tensor& w, const ConvGeometry& g) {
  const int nsp = g.nsp;
  bool strided = false;
  for (int i = 0; i < nsp; ++i) strided = strided || g.stride[dim_slot(nsp, i)] > 1;
  // Strided: the transposed conv skips the zeros a correlation would multiply (conv3d has no
  // transposed op, so it pays for them). Unit stride: a plain conv is faster on flex.
  if (nsp <= 2 && strided) {
    Attrs a = conv_attrs(used_dims(g.stride, nsp), used_dims(g.pad, nsp),
                         used_dims(g.dilation, nsp), g.groups);
    for (int i = 0; i < nsp; ++i) {
      const size_t j = dim_slot(nsp, i);
      // The input rows past the last window (fewer than the stride) come back as
      // output_padding. ("same", whose padding may be asymmetric, has unit stride.)
      const int64_t full =
          (g.out[j] - 1) * g.stride[j] - 2 * g.pad[j] + g.dilation[j] * (g.kernel[j] - 1) + 1;
      a.ints.push_back(g.in[j] - full);
    }
    return dispatch1(conv_transpose_op(nsp), a, {gy, w, Tensor()});
  }
  // xpad's gradient at j is sum_k gd[j - k*d] w[k] (gd: gy with stride-1 zeros between), a
  // correlation with the flipped kernel; pad gd so that it lines up with x itself.
  Tensor gd = gy;
  Shape left, right, flip_dims;
  for (int i = 0; i < nsp; ++i) {
    const size_t j = dim_slot(nsp, i);
    gd = dilate(gd, 2 + i, g.stride[j]);
    const int64_t reach = g.dilation[j] * (g.kernel[j] - 1);
    left.push_back(reach - g.pad[j]);
    right.push_back(g.in[j] + reach - left.back() - gd.size(2 + i));
    flip_dims.push_back(2 + i);
  }
  gd = pad_spatial(gd, left, right);
  const Tensor wf = flip(swap_group_channels(w, g.groups), flip_dims);
  Attrs a = conv_attrs(Shape{1}, Shape{0}, used_dims(g.dilation, nsp), g.groups);
  return dispatch1(conv_op(nsp), a, {gd, wf, Tensor()});
}

// Three slots from one value per spatial dim.
// One value per spatial dim (the attrs conv_grad_attrs writes), each at least `min`.
Dims slots(const char* op, const IntVec& v, int nsp, const char* what, int64_t fill, int64_t min) {
  if (v.size() != size_t(nsp))
    detail::throw_value(
        op, "expected " + std::to_string(nsp) + " values for " + what + ", found " + shape_str(v));
  return spread(op, v, nsp, what, fill, min);
}

void infer_conv_grad(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const ConvGeometry g = conv_grad_geometry(op, a, in);
  Shape s;
  if (op == OpId::conv_input_grad) {
    s = {g.n, g.c_in};
    for (int i = 0; i < g.nsp; ++i) s.push_back(g.in[dim_slot(g.nsp, i)]);
  } else {
    s = {g.c_out, g.c_in / g.groups};
    for (int i = 0; i < g.nsp; ++i) s.push_back(g.kernel[dim_slot(g.nsp, i)]);
  }
  out.add(s, in[0].dtype());
}

TensorList dec_input_grad(const Attrs& a, std::span<const Tensor> in) {
  return {input_grad(in[0], in[1], conv_grad_geometry(OpId::conv_input_grad, a, in))};
}
TensorList dec_weight_grad(const Attrs& a, std::span<const Tensor> in) {
  return {weight_grad(in[0], in[1], conv_grad_geometry(OpId::conv_weight_grad, a, in))};
}

}  // namespace

Attrs conv_grad_attrs(OpId op, const ConvGeometry& g) {
  Attrs a = conv_attrs(used_dims(g.stride, g.nsp), used_dims(g.pad, g.nsp),
                       used_dims(g.dilation, g.nsp), g.groups);
  a.ints = used_dims(op == OpId::conv_input_grad ? g.in : g.kernel, g.nsp);
  return a;
}

ConvGeometry conv_grad_geometry(OpId op, const Attrs& a, std::span<const Tensor> in) {
  const char* name = op_name(op);
  const bool input = op == OpId::conv_input_grad;
  if (in.size() != 2)
    detail::throw_value(name, input ? "expected inputs (grad_output, weight)"
                                    : "expected inputs (input, grad_output)");
  for (const Tensor& t : in) require_defined(t, name);
  if (in[0].dtype() != in[1].dtype())
    detail::throw_dtype(name, "expected inputs of one dtype, found " +
                                  std::string(dtype_name(in[0].dtype())) + " and " +
                                  std::string(dtype_name(in[1].dtype())));
  require_dtype(name, in[0].dtype(), kFloatDTypes, "a floating dtype");
  const Tensor& gy = input ? in[0] : in[1];
  const Tensor& other = input ? in[1] : in[0];  // w or x
  ConvGeometry g;
  g.nsp = int(other.dim()) - 2;
  if (g.nsp < 1 || g.nsp > 3 || gy.dim() != other.dim())
    detail::throw_shape(name, "expected " + std::string(input ? "weight" : "input") +
                                  " and grad_output of rank 3 to 5, found shapes " +
                                  shape_str(other.shape()) + " and " + shape_str(gy.shape()));
  g.groups = a.i[0];
  if (g.groups <= 0)
    detail::throw_value(name, "groups must be positive, found " + std::to_string(g.groups));
  g.stride = slots(name, a.ints2, g.nsp, "stride", 1, 1);
  g.pad = slots(name, a.ints3, g.nsp, "padding", 0, 0);
  g.dilation = slots(name, a.ints4, g.nsp, "dilation", 1, 1);
  g.n = gy.size(0);
  g.c_out = gy.size(1);
  for (int i = 0; i < g.nsp; ++i) g.out[dim_slot(g.nsp, i)] = gy.size(2 + i);
  if (input) {
    const Tensor& w = other;
    if (w.size(0) != g.c_out || g.c_out % g.groups)
      detail::throw_shape(name, "weight of shape " + shape_str(w.shape()) +
                                    " with groups=" + std::to_string(g.groups) +
                                    " does not fit grad_output " + shape_str(gy.shape()));
    g.c_in = w.size(1) * g.groups;
    g.in = slots(name, a.ints, g.nsp, "input size", 1, 1);
    for (int i = 0; i < g.nsp; ++i) g.kernel[dim_slot(g.nsp, i)] = w.size(2 + i);
  } else {
    const Tensor& x = other;
    if (x.size(0) != g.n || x.size(1) % g.groups || g.c_out % g.groups)
      detail::throw_shape(name, "input " + shape_str(x.shape()) + " and grad_output " +
                                    shape_str(gy.shape()) +
                                    " do not fit groups=" + std::to_string(g.groups));
    g.c_in = x.size(1);
    for (int i = 0; i < g.nsp; ++i) g.in[dim_slot(g.nsp, i)] = x.size(2 + i);
    g.kernel = slots(name, a.ints, g.nsp, "kernel size", 1, 1);
  }
  return g;
}

void register_conv_grad_ops() {
  for (OpId op : {OpId::conv_input_grad, OpId::conv_weight_grad})
    op_def_mut(op).infer = infer_conv_grad;
  op_def_mut(OpId::conv_input_grad).decompose = dec_input_grad;
  op_def_mut(OpId::conv_weight_grad).decompose = dec_weight_grad;
}

}  // namespace ember::ops

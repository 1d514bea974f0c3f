// VJP rules: convolution, transposed convolution, unfold and fold, written with the same ops.
// With y = conv(x, w) (stride s, leading padding p, dilation d, groups):
// - x's gradient is the adjoint of the convolution: conv_transpose of the cotangent with the
//   same weight (its output_padding picks the input size back), or a correlation of the
//   (stride-dilated) cotangent with the flipped, group-transposed weight.
// - w's gradient correlates the padded input with the cotangent: unfold(x) times the cotangent
//   (1-d, 2-d), or a convolution with batch and channels swapped, stride d and dilation s (3-d).
// A transposed convolution is the adjoint of a convolution, so its rules are the same pieces with
// the roles exchanged.
#include "ember/autodiff/rules.h"
#include "ember/ops/conv.h"

namespace ember::autodiff {
namespace {

// Input i is given and asks for a gradient (optional inputs may be undefined).
bool wants(const VjpCtx& c, size_t i) {
  return c.needs_grad(i) && i < c.inputs.size() && c.input(i).defined();
}

using ops::ConvGeometry;
using Dims = ConvGeometry::Dims;

OpId conv_op(int nsp) {
  return nsp == 1 ? OpId::conv1d : nsp == 2 ? OpId::conv2d : OpId::conv3d;
}
OpId conv_transpose_op(int nsp) {
  return nsp == 1 ? OpId::conv_transpose1d : OpId::conv_transpose2d;
}

// The used (last nsp) slots of a right-aligned geometry triple.
Shape used(const Dims& v, int nsp) {
  return Shape(std::span<const int64_t>(v.data() + (3 - nsp), size_t(nsp)));
}
size_t slot(int nsp, int i) { return size_t(3 - nsp + i); }

Attrs conv_attrs(const Shape& stride, const Shape& pad, const Shape& dilation, int64_t groups) {
  Attrs a;
  a.ints2 = stride;
  a.ints3 = pad;
  a.ints4 = dilation;
  a.i[0] = groups;
  return a;
}

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

// Gradient of the weight [Cg, Cx/G, k...] of y = conv(x, w), x [N, Cx, in...], from y's
// cotangent gy [N, Cg, out...]: w'[o, c, k] = sum_{n,t} gy[n, o, t] xpad[n, c, t*s + k*d].
// 1-d and 2-d: unfold x and multiply by gy per (sample, group), then sum over samples. 3-d (no
// 3-d unfold): a convolution of x with gy as the kernel, batch and channels swapped, stride d
// and dilation s. The unfold route is about 3x faster on flex, which is why both exist.
Tensor conv_weight_grad(const Tensor& x, const Tensor& gy, const ConvGeometry& g, const Dims& in,
                        const Dims& out) {
  const int nsp = g.nsp;
  const int64_t n = x.size(0), cx = x.size(1), cg = gy.size(1), groups = g.groups;
  Shape wshape = {cg, cx / groups};
  for (int i = 0; i < nsp; ++i) wshape.push_back(g.kernel[slot(nsp, i)]);
  if (n == 0) return zeros(wshape, {x.dtype(), x.device()});
  // The windows' own padding reproduces exactly `out` windows unless the padding is asymmetric
  // ("same") or x has room for more windows (a transposed conv's output_padding); then pad or
  // crop x to exactly the span the windows read.
  bool exact = true;
  Shape left, right;
  for (int i = 0; i < nsp; ++i) {
    const size_t j = slot(nsp, i);
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
  Attrs a = conv_attrs(used(g.dilation, nsp), Shape{0}, used(g.stride, nsp), groups);
  return dispatch1(conv_op(nsp), a, {xsw, gsw, Tensor()}).transpose(0, 1).contiguous();
}

// Gradient of x [N, C, in...] for y = conv(x, w) from gy [N, O, out...].
Tensor conv_input_grad(const Tensor& gy, const Tensor& w, const ConvGeometry& g) {
  const int nsp = g.nsp;
  bool strided = false;
  for (int i = 0; i < nsp; ++i) strided = strided || g.stride[slot(nsp, i)] > 1;
  // Strided: the transposed conv skips the zeros a correlation would multiply (conv3d has no
  // transposed op, so it pays for them). Unit stride: a plain conv is faster on flex.
  if (nsp <= 2 && strided) {
    Attrs a = conv_attrs(used(g.stride, nsp), used(g.pad, nsp), used(g.dilation, nsp), g.groups);
    for (int i = 0; i < nsp; ++i) {
      const size_t j = slot(nsp, i);
      // The input rows past the last window (fewer than the stride) come back as
      // output_padding. ("same", whose padding may be asymmetric, has unit stride.)
      const int64_t full = (g.out[j] - 1) * g.stride[j] - 2 * g.pad[j] +
                           g.dilation[j] * (g.kernel[j] - 1) + 1;
      a.ints.push_back(g.in[j] - full);
    }
    return dispatch1(conv_transpose_op(nsp), a, {gy, w, Tensor()});
  }
  // xpad's gradient at j is sum_k gd[j - k*d] w[k] (gd: gy with stride-1 zeros between), a
  // correlation with the flipped kernel; pad gd so that it lines up with x itself.
  Tensor gd = gy;
  Shape left, right, flip_dims;
  for (int i = 0; i < nsp; ++i) {
    const size_t j = slot(nsp, i);
    gd = dilate(gd, 2 + i, g.stride[j]);
    const int64_t reach = g.dilation[j] * (g.kernel[j] - 1);
    left.push_back(reach - g.pad[j]);
    right.push_back(g.in[j] + reach - left.back() - gd.size(2 + i));
    flip_dims.push_back(2 + i);
  }
  gd = pad_spatial(gd, left, right);
  const Tensor wf = flip(swap_group_channels(w, g.groups), flip_dims);
  Attrs a = conv_attrs(Shape{1}, Shape{0}, used(g.dilation, nsp), g.groups);
  return dispatch1(conv_op(nsp), a, {gd, wf, Tensor()});
}

Tensor bias_grad(const Tensor& gy, int nsp) {
  Shape dims = {0};
  for (int i = 0; i < nsp; ++i) dims.push_back(2 + i);
  return sum(gy, dims);
}

// Unbatched inputs run as a batch of one.
struct Batched {
  Tensor x, g;
  bool squeeze;
};
Batched batched(const VjpCtx& c, const ConvGeometry& g) {
  if (g.batched) return {c.input(0), c.grad(0), false};
  return {c.input(0).unsqueeze(0), c.grad(0).unsqueeze(0), true};
}
Tensor unbatch(const Tensor& t, bool squeeze) { return squeeze ? t.squeeze(0) : t; }

TensorList vjp_conv(const VjpCtx& c) {
  const ConvGeometry g = ops::conv_geometry(c.op, c.attrs, c.inputs);
  const Batched b = batched(c, g);
  Tensor gx, gw, gbias;
  if (wants(c, 0)) gx = unbatch(conv_input_grad(b.g, c.input(1), g), b.squeeze);
  if (wants(c, 1)) gw = conv_weight_grad(b.x, b.g, g, g.in, g.out);
  if (wants(c, 2)) gbias = bias_grad(b.g, g.nsp);
  return {gx, gw, gbias};
}

// y = conv_transpose(x, w) is the adjoint of z = conv(y, w) in y, so x's gradient is that
// convolution of the cotangent, and w's is the conv weight gradient with x as the cotangent.
TensorList vjp_conv_transpose(const VjpCtx& c) {
  const ConvGeometry g = ops::conv_geometry(c.op, c.attrs, c.inputs);
  const int nsp = g.nsp;
  const Batched b = batched(c, g);
  Tensor gx, gw, gbias;
  if (wants(c, 0)) {
    Attrs a = conv_attrs(used(g.stride, nsp), used(g.pad, nsp), used(g.dilation, nsp), g.groups);
    Tensor r = dispatch1(conv_op(nsp), a, {b.g, c.input(1), Tensor()});
    // An output_padding of stride or more (allowed when dilation is larger) adds windows.
    for (int i = 0; i < nsp; ++i)
      if (r.size(2 + i) != g.in[slot(nsp, i)]) r = r.narrow(2 + i, 0, g.in[slot(nsp, i)]);
    gx = unbatch(r, b.squeeze);
  }
  if (wants(c, 1)) gw = conv_weight_grad(b.g, b.x, g, g.out, g.in);
  if (wants(c, 2)) gbias = bias_grad(b.g, nsp);
  return {gx, gw, gbias};
}

// unfold and fold are adjoint: each one's gradient is the other with the same block geometry.
TensorList vjp_unfold(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  Attrs a = c.attrs;
  a.i[0] = c.input(0).size(-2);
  a.i[1] = c.input(0).size(-1);
  a.i[2] = 2;
  return {dispatch1(OpId::fold, a, {c.grad(0)})};
}

TensorList vjp_fold(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  Attrs a = c.attrs;
  a.i = {};
  return {dispatch1(OpId::unfold, a, {c.grad(0)})};
}

}  // namespace

void register_rules_nn_conv() {
  for (OpId op : {OpId::conv1d, OpId::conv2d, OpId::conv3d}) set_vjp(op, vjp_conv);
  for (OpId op : {OpId::conv_transpose1d, OpId::conv_transpose2d})
    set_vjp(op, vjp_conv_transpose);
  set_vjp(OpId::unfold, vjp_unfold);
  set_vjp(OpId::fold, vjp_fold);
}

}  // namespace ember::autodiff

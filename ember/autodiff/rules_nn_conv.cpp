// VJP rules: convolution, transposed convolution, unfold and fold, written with the same ops.
// A convolution's gradients are the ops conv_input_grad and conv_weight_grad (ember/ops/
// conv_grad.cpp: their decompositions say how they are computed). A transposed convolution is
// the adjoint of a convolution, so its rules are the same pieces with the roles exchanged.
#include "ember/autodiff/rules.h"
#include "ember/ops/conv.h"

namespace ember::autodiff {
namespace {

// Input i is given and asks for a gradient (optional inputs may be undefined).
bool wants(const VjpCtx& c, size_t i) {
  return c.needs_grad(i) && i < c.inputs.size() && c.input(i).defined();
}

using ops::conv_attrs;
using ops::conv_op;
using ops::ConvGeometry;
using ops::dim_slot;
using ops::used_dims;
using Dims = ConvGeometry::Dims;

// The gradients of y = conv(x, w) for x and w, as the ops a backend may serve in one call.
Tensor conv_input_grad(const Tensor& gy, const Tensor& w, const ConvGeometry& g) {
  return dispatch1(OpId::conv_input_grad, ops::conv_grad_attrs(OpId::conv_input_grad, g), {gy, w});
}
Tensor conv_weight_grad(const Tensor& x, const Tensor& gy, ConvGeometry g, const Dims& in,
                        const Dims& out) {
  g.in = in, g.out = out;
  return dispatch1(OpId::conv_weight_grad, ops::conv_grad_attrs(OpId::conv_weight_grad, g),
                   {x, gy});
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
    Attrs a = conv_attrs(used_dims(g.stride, nsp), used_dims(g.pad, nsp),
                         used_dims(g.dilation, nsp), g.groups);
    Tensor r = dispatch1(conv_op(nsp), a, {b.g, c.input(1), Tensor()});
    // An output_padding of stride or more (allowed when dilation is larger) adds windows.
    for (int i = 0; i < nsp; ++i)
      if (r.size(2 + i) != g.in[dim_slot(nsp, i)]) r = r.narrow(2 + i, 0, g.in[dim_slot(nsp, i)]);
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
  for (OpId op : {OpId::conv_transpose1d, OpId::conv_transpose2d}) set_vjp(op, vjp_conv_transpose);
  set_vjp(OpId::unfold, vjp_unfold);
  set_vjp(OpId::fold, vjp_fold);
}

}  // namespace ember::autodiff

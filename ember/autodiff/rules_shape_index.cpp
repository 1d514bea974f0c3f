// VJP rules: gathers and scatters (index_select, gather, take, scatter, scatter_add,
// scatter_reduce, index_add, masked_fill, masked_select). A gather's gradient scatter-adds g back
// to the positions it read; a scatter's gradient gathers g from the positions it wrote. Indices
// and masks never get gradients.
#include "ember/ops/modes.h"
#include "ember/autodiff/rules_shape.h"

namespace ember::autodiff::shape_rules {
namespace {

TensorList vjp_index_select(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor(), Tensor()};
  const Tensor& x = c.input(0);
  if (x.dim() == 0) return {c.grad(0), Tensor()};  // a 0-d x comes back whole, as in torch
  return {index_add(zeros_as(x.shape(), c.grad(0)), c.attrs.i[0], c.input(1), c.grad(0)),
          Tensor()};
}

TensorList vjp_gather(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor(), Tensor()};
  const Tensor& x = c.input(0);
  return {scatter_add(zeros_as(x.shape(), c.grad(0)), c.attrs.i[0], c.input(1), c.grad(0)),
          Tensor()};
}

// take reads x flattened; negative indices count from the end.
TensorList vjp_take(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor(), Tensor()};
  const Tensor& x = c.input(0);
  const Tensor& g = c.grad(0);
  Tensor idx = reshape(c.input(1), {-1});
  idx = where(lt(idx, 0), add(idx, x.numel()), idx);
  Tensor flat = index_add(zeros_as({x.numel()}, g), 0, idx, reshape(g, {-1}));
  return {reshape(flat, x.shape()), Tensor()};
}

// Which index positions of a scatter decide their target: with repeated indices one write wins
// (the kernels walk the dim in order, so the last one), and only the winner reaches the output.
// Each position scatters its own number; the positions that read their number back won.
Tensor scatter_winners(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor ids = reshape(arange(index.numel(), {DType::I64, x.device()}), index.shape());
  Tensor owner = scatter(full(x.shape(), int64_t(-1), {DType::I64, x.device()}), dim, index, ids);
  return eq(gather(owner, dim, index), ids);
}

// scatter: x keeps g where nothing was written; src gets g at the targets it won.
TensorList vjp_scatter(const VjpCtx& c) {
  const Tensor& x = c.input(0);
  const Tensor& index = c.input(1);
  const Tensor& g = c.grad(0);
  const int64_t dim = c.attrs.i[0];
  TensorList out(c.inputs.size());
  if (wants(c, 0)) out[0] = scatter(g, dim, index, Scalar(0));
  if (c.inputs.size() > 2 && wants(c, 2)) {
    Tensor gs = where(scatter_winners(x, dim, index), gather(g, dim, index), 0.0);
    out[2] = fit_to(gs, c.input(2).shape());
  }
  return out;
}

TensorList vjp_scatter_add(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  TensorList out(3);
  if (wants(c, 0)) out[0] = g;
  if (wants(c, 2)) out[2] = fit_to(gather(g, c.attrs.i[0], c.input(1)), c.input(2).shape());
  return out;
}

// torch's scatter_reduce_backward. prod divides out the factor (with zeros handled apart);
// amax/amin split g evenly among the elements equal to the result. Without include_self, x's
// scattered-to positions took no part, so they get nothing (and, unlike torch, are not counted
// among amax/amin's ties when they happen to equal the result).
TensorList vjp_scatter_reduce(const VjpCtx& c) {
  const Tensor& x = c.input(0);
  const Tensor& index = c.input(1);
  const Tensor& g = c.grad(0);
  const Tensor& result = c.output(0);
  const int64_t dim = c.attrs.i[0];
  const auto reduce = ops::ScatterReduce(c.attrs.mode);
  const bool self = c.attrs.b[0];
  if (!wants(c, 0) && !wants(c, 2)) return {Tensor(), Tensor(), Tensor()};
  Tensor src = crop_to(c.input(2), index.shape());  // scatter reads only index's block
  Tensor gx, gs;
  if (reduce == ops::ScatterReduce::Sum) {
    gx = g;
    gs = gather(g, dim, index);
  } else if (reduce == ops::ScatterReduce::Mean) {
    Tensor n = self ? ones_like(g) : zeros_like(g);
    n = scatter_add(n, dim, index, ones_like(src));
    gx = div(g, masked_fill(n, eq(n, 0), Scalar(1)));
    gs = gather(gx, dim, index);
  } else if (reduce == ops::ScatterReduce::Prod) {
    Tensor x_nz = masked_fill(x, eq(x, 0), Scalar(1));
    gx = div(mul(g, scatter_reduce(x_nz, dim, index, src, "prod", self)), x_nz);
    // A src element that is the only zero at its target: its gradient is the product of the
    // others, recomputed with it set to 1; for the rest, result / src.
    Tensor zero = eq(src, 0);
    Tensor zeros_at =
        gather(scatter_add(zeros_like(x), dim, index, zero.to(x.dtype())), dim, index);
    Tensor single = logical_and(zero, eq(zeros_at, 1));
    Tensor others =
        scatter_reduce(x, dim, index, masked_fill(src, single, Scalar(1)), "prod", self);
    gs = where(single, gather(mul(g, others), dim, index),
               div(gather(mul(g, result), dim, index), masked_fill(src, zero, Scalar(1))));
  } else {  // amax, amin
    Tensor value = gather(result, dim, index);
    Tensor x_is = eq(x, result);
    if (!self) x_is = logical_and(x_is, logical_not(scatter(zeros_like(x_is), dim, index, true)));
    Tensor src_is = eq(src, value);
    Tensor count = scatter_add(x_is.to(g.dtype()), dim, index, src_is.to(g.dtype()));
    Tensor share = div(g, count);
    gx = where(x_is, share, 0.0);
    gs = where(src_is, gather(share, dim, index), 0.0);
  }
  if (!self) gx = scatter(gx, dim, index, Scalar(0));
  return {wants(c, 0) ? gx : Tensor(), Tensor(),
          wants(c, 2) ? fit_to(gs, c.input(2).shape()) : Tensor()};
}

// index_add: x passes g through; src gets alpha * g at the rows it was added to.
TensorList vjp_index_add(const VjpCtx& c) {
  const Tensor& g = c.grad(0);
  TensorList out(3);
  if (wants(c, 0)) out[0] = g;
  if (wants(c, 2)) {
    const Tensor& src = c.input(2);
    // A 0-d x takes every src element (all at index 0).
    Tensor gs = g.dim() == 0 ? expand(g, src.shape()) : index_select(g, c.attrs.i[0], c.input(1));
    const Scalar alpha = c.attrs.s[0];
    if (alpha.to_double() != 1.0) gs = mul(gs, alpha);
    out[2] = gs;
  }
  return out;
}

// masked_fill: x keeps g where the (broadcast) mask is false; a tensor value collects the rest.
TensorList vjp_masked_fill(const VjpCtx& c) {
  const Tensor& mask = c.input(1);
  const Tensor& g = c.grad(0);
  TensorList out(c.inputs.size());
  if (wants(c, 0)) out[0] = sum_to(masked_fill(g, mask, Scalar(0)), c.input(0).shape());
  if (c.inputs.size() > 2 && wants(c, 2))
    out[2] = like(sum(masked_fill(g, logical_not(mask), Scalar(0))), c.input(2));
  return out;
}

// masked_select: g goes back to the selected positions of the broadcast x.
TensorList vjp_masked_select(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor(), Tensor()};
  const Tensor& x = c.input(0);
  const Tensor& mask = c.input(1);
  const Tensor& g = c.grad(0);
  Shape s = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  Tensor full_g = index_put(zeros_as(s, g), {expand(mask, s)}, g);
  return {sum_to(full_g, x.shape()), Tensor()};
}

}  // namespace

void register_index() {
  set_vjp(OpId::index_select, vjp_index_select);
  set_vjp(OpId::gather, vjp_gather);
  set_vjp(OpId::take, vjp_take);
  set_vjp(OpId::scatter, vjp_scatter);
  set_vjp(OpId::scatter_add, vjp_scatter_add);
  set_vjp(OpId::scatter_reduce, vjp_scatter_reduce);
  set_vjp(OpId::index_add, vjp_index_add);
  set_vjp(OpId::masked_fill, vjp_masked_fill);
  set_vjp(OpId::masked_select, vjp_masked_select);
}

}  // namespace ember::autodiff::shape_rules

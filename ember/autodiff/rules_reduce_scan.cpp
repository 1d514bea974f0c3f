// VJP rules: scans (cumsum, cumprod, cummax, cummin), sort, topk, kthvalue and median, with
// PyTorch's derivative formulas. Attrs (ember/ops/scan.cpp): i[0] dim for all of them;
// kthvalue/median: b[0] keepdim; median: b[1] a dim was given (else a 0-d value).
#include <cmath>

#include "ember/autodiff/rules_reduce.h"

namespace ember::autodiff {
namespace {

bool differentiable_input(const VjpCtx& c) {
  return c.grad(0).defined() && is_floating(c.input(0).dtype());
}
int64_t dim_of(const VjpCtx& c) { return wrap_dim(c.attrs.i[0], c.input(0).dim(), "vjp"); }

// sum_{j >= i} t_j along dim.
Tensor reversed_cumsum(const Tensor& t, int64_t dim) {
  return flip(cumsum(flip(t, {dim}), dim), {dim});
}

TensorList vjp_cumsum(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  if (x.dim() == 0) return {fit_to(c.grad(0), x)};
  return {fit_to(reversed_cumsum(c.grad(0), dim_of(c)), x)};
}

// d out_j / d x_i = out_j / x_i for j >= i, so the gradient is reversed_cumsum(g * out) / x when
// no element is zero. With zeros (torch's cumprod_backward handles them too): before a lane's
// first zero that formula still holds (every out_j past the zero is 0); at the first zero the
// gradient is reversed_cumsum(g * cumprod(x with that zero replaced by 1)); after it, 0. One
// branch-free form serves both, so nothing is read on the host.
Tensor cumprod_backward(const Tensor& g, const Tensor& xc, const Tensor& out, int64_t dim) {
  Tensor zeros_seen = cumsum(xc == 0.0, dim);
  Tensor before = zeros_seen == 0;
  Tensor first = logical_and(xc == 0.0, zeros_seen == 1);
  Tensor grad_before = reversed_cumsum(g * out, dim) / where(before, xc, 1.0);
  Tensor grad_first = reversed_cumsum(g * cumprod(where(first, 1.0, xc), dim), dim);
  return where(before, grad_before, where(first, grad_first, 0.0));
}

TensorList vjp_cumprod(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  const Tensor& g = c.grad(0);
  if (x.numel() <= 1) return {fit_to(g, x)};
  const int64_t dim = dim_of(c);
  if (x.size(dim) == 1) return {fit_to(g, x)};
  return {fit_to(cumprod_backward(g, x.to(c.output(0).dtype()), c.output(0), dim), x)};
}

// cummax/cummin: each output takes its value from the element its index names; an element
// selected by several outputs collects all their cotangents.
TensorList vjp_cummax_cummin(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  const Tensor& g = c.grad(0);
  if (x.dim() == 0) return {g};
  if (x.numel() == 0) return {zeros_like(x)};
  return {scatter_add(zeros(x.shape(), {g.dtype(), g.device()}), dim_of(c), c.output(1), g)};
}

// sort/topk: values come from distinct positions (their indices), so g scatters back.
TensorList vjp_sort_topk(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  return {select_backward(c.grad(0), c.output(1), c.input(0), c.attrs.i[0], /*keepdim=*/true)};
}

TensorList vjp_kthvalue(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  return {select_backward(c.grad(0), c.output(1), c.input(0), c.attrs.i[0], c.attrs.b[0])};
}

// median of the whole tensor: g split among the elements equal to it (torch 1.13 does so); with
// a dim: the element its index names.
TensorList vjp_median(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  if (!c.attrs.b[1]) return {evenly_distribute(c.grad(0), c.input(0), c.output(0))};
  return {select_backward(c.grad(0), c.output(1), c.input(0), c.attrs.i[0], c.attrs.b[0])};
}

}  // namespace

void register_rules_reduce_scan() {
  set_vjp(OpId::cumsum, vjp_cumsum);
  set_vjp(OpId::cumprod, vjp_cumprod);
  set_vjp(OpId::cummax, vjp_cummax_cummin);
  set_vjp(OpId::cummin, vjp_cummax_cummin);
  set_vjp(OpId::sort, vjp_sort_topk);
  set_vjp(OpId::topk, vjp_sort_topk);
  set_vjp(OpId::kthvalue, vjp_kthvalue);
  set_vjp(OpId::median, vjp_median);
}

}  // namespace ember::autodiff

// VJP rules: reductions (sum, mean, prod, max/min, amax/amin, var/std, logsumexp, norm), with
// PyTorch's derivative formulas. Scans, sorting and order statistics: rules_reduce_scan.cpp.
// Reduction Attrs (ember/ops/reduce.cpp): ints dims (empty = all), b[0] keepdim; max/min: b[1] a
// dim was given, i[0] that dim; var/std: f[0] correction; norm: f[0] p.
#include "ember/autodiff/rules_reduce.h"

#include <cmath>

#include "ember/ops/common.h"

namespace ember::autodiff {

Tensor unreduce(const Tensor& g, const Tensor& x, const Shape& dims, bool keepdim) {
  if (keepdim || x.dim() == 0) return g;
  Shape s = x.shape();
  for (int64_t d : dims) s[size_t(d)] = 1;
  return g.reshape(s);
}

Tensor select_backward(const Tensor& g, const Tensor& indices, const Tensor& x, int64_t dim,
                       bool keepdim) {
  if (x.dim() == 0) return g.reshape({});
  dim = wrap_dim(dim, x.dim(), "vjp");
  Tensor gk = keepdim ? g : g.unsqueeze(dim);
  Tensor ik = keepdim ? indices : indices.unsqueeze(dim);
  return scatter(zeros(x.shape(), {g.dtype(), g.device()}), dim, ik, gk);
}

Tensor evenly_distribute(const Tensor& g, const Tensor& x, const Tensor& result) {
  Tensor mask = logical_or(x == result, logical_and(isnan(x), isnan(result)));
  Tensor count = sum(mask).to(g.dtype());
  return where(mask, g / count, 0.0);
}

namespace {

bool differentiable_input(const VjpCtx& c) {
  return c.grad(0).defined() && is_floating(c.input(0).dtype());
}
// The wrapped, sorted dims the forward reduced over (empty attrs = all dims).
Shape dims_of(const VjpCtx& c) {
  return ops::reduce_dims(c.attrs.ints, c.input(0).dim(), op_name(c.op));
}
int64_t count_over(const Tensor& x, const Shape& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.size(d);
  return n;
}
// Divides by `den` where it is non-zero and gives 0 where it is zero, without ever dividing by
// zero (so the rule's own gradient stays finite there too).
Tensor div_or_zero(const Tensor& num, const Tensor& den) {
  Tensor zero = den == 0.0;
  return where(zero, 0.0, num / where(zero, 1.0, den));
}

// sum, mean: the cotangent broadcast back over the reduced dims (mean: divided by their count).
TensorList vjp_sum_mean(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  Shape dims = dims_of(c);
  Tensor g = fit_to(unreduce(c.grad(0), x, dims, c.attrs.b[0]), x);
  if (c.op == OpId::mean) g = g / double(count_over(x, dims));
  return {expand(g, x.shape())};
}

// prod along `dim` of xc (the input in the output dtype), g and result broadcastable along dim.
// Branch-free, so nothing is read on the host: a lane without zeros gets result / x; in a lane
// with one zero that element gets the product of the others and the rest 0; with more, all 0.
Tensor prod_backward(const Tensor& g, const Tensor& xc, const Tensor& result, int64_t dim) {
  const Tensor zero = xc == 0.0;
  const Tensor safe = where(zero, 1.0, xc);
  const Tensor zeros_in_lane = sum(zero, {dim}, true);
  const Tensor at_zero = where(zeros_in_lane == 1, prod(safe, {dim}, true), 0.0);
  return g * where(zero, at_zero, where(zeros_in_lane == 0, result / safe, 0.0));
}

TensorList vjp_prod(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  const Tensor& out = c.output(0);
  Tensor xc = x.to(out.dtype());
  if (x.dim() == 0) return {fit_to(c.grad(0), x)};
  if (c.attrs.ints.empty()) {  // the whole tensor: a product along the flattened dim
    Tensor flat = xc.reshape({x.numel()});
    Tensor gx = prod_backward(c.grad(0).reshape({1}), flat, out.reshape({1}), 0);
    return {fit_to(gx.reshape(x.shape()), x)};
  }
  const int64_t dim = wrap_dim(c.attrs.ints[0], x.dim(), "prod");
  const bool keep = c.attrs.b[0];
  Tensor gk = unreduce(c.grad(0), x, {dim}, keep), ok = unreduce(out, x, {dim}, keep);
  return {fit_to(prod_backward(gk, xc, ok, dim), x)};
}

// max/min: the whole-tensor form splits g among ties; the dim form picks its index.
TensorList vjp_max_min(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  if (!c.attrs.b[1]) return {evenly_distribute(c.grad(0), x, c.output(0))};
  return {select_backward(c.grad(0), c.output(1), x, c.attrs.i[0], c.attrs.b[0])};
}

// amax/amin: g split evenly among the elements equal to the result in each lane. As in torch, a
// lane whose result is NaN has no such element and gets NaN (g / 0 * 0).
TensorList vjp_amax_amin(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  Shape dims = dims_of(c);
  const bool keep = c.attrs.b[0];
  Tensor g = unreduce(c.grad(0), x, dims, keep);
  Tensor mask = unreduce(c.output(0), x, dims, keep) == x;
  Tensor count = sum(mask, dims, true).to(g.dtype());
  return {(g / count) * mask.to(g.dtype())};
}

// var: 2 / (N - correction) * g * (x - mean); std = sqrt(var) scales g by 1 / (2 std), 0 where
// std is 0 (torch's subgradient).
TensorList vjp_var_std(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  Shape dims = dims_of(c);
  const bool keep = c.attrs.b[0];
  Tensor g = unreduce(c.grad(0), x, dims, keep);
  if (c.op == OpId::std) g = div_or_zero(g, unreduce(c.output(0), x, dims, keep) * 2.0);
  const double scale = 2.0 / (double(count_over(x, dims)) - c.attrs.f[0]);
  return {g * scale * (x - mean(x, dims, true))};
}

TensorList vjp_logsumexp(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  Shape dims = dims_of(c);
  const bool keep = c.attrs.b[0];
  Tensor g = unreduce(c.grad(0), x, dims, keep);
  return {g * exp(x - unreduce(c.output(0), x, dims, keep))};
}

// norm: torch's norm_backward, case by case on p; every case has subgradient 0 at x = 0 and at
// a zero norm.
TensorList vjp_norm(const VjpCtx& c) {
  if (!differentiable_input(c)) return {Tensor()};
  const Tensor& x = c.input(0);
  const double p = c.attrs.f[0];
  if (p == 0) return {zeros_like(x)};  // a count of non-zeros is locally constant
  Shape dims = dims_of(c);
  const bool keep = c.attrs.b[0];
  Tensor g = unreduce(c.grad(0), x, dims, keep);
  Tensor n = unreduce(c.output(0), x, dims, keep);
  if (p == 1) return {sign(x) * g};
  if (p == 2) return {g * div_or_zero(x, n)};
  if (std::isinf(p)) {  // max (min) of |x|: split among the ties, NaNs counting as selected
    Tensor ax = abs(x);
    Tensor mask = logical_or(ax == n, isnan(ax)).to(g.dtype());
    return {sign(x) * ((g / sum(mask, dims, true)) * mask)};
  }
  Tensor zero = x == 0.0;
  if (p < 1) {  // |x|^(p-1) blows up at 0, where torch takes 0
    Tensor scaled = where(zero, 0.0, sign(x) * pow(where(zero, 1.0, abs(x)), p - 1));
    return {scaled * g * pow(n, 1 - p)};
  }
  Tensor scaled = p < 2 ? sign(x) * pow(abs(x), p - 1) : x * pow(abs(x), p - 2);
  return {scaled * div_or_zero(g, pow(n, p - 1))};
}

}  // namespace

void register_rules_reduce() {
  set_vjp(OpId::sum, vjp_sum_mean);
  set_vjp(OpId::mean, vjp_sum_mean);
  set_vjp(OpId::prod, vjp_prod);
  set_vjp(OpId::max, vjp_max_min);
  set_vjp(OpId::min, vjp_max_min);
  set_vjp(OpId::amax, vjp_amax_amin);
  set_vjp(OpId::amin, vjp_amax_amin);
  set_vjp(OpId::var, vjp_var_std);
  set_vjp(OpId::std, vjp_var_std);
  set_vjp(OpId::logsumexp, vjp_logsumexp);
  set_vjp(OpId::norm, vjp_norm);
  // argmax, argmin, any, all and count_nonzero are marked non-differentiable where they are
  // registered (ember/ops/reduce.cpp), argsort in ember/ops/scan.cpp.
  register_rules_reduce_scan();
}

}  // namespace ember::autodiff

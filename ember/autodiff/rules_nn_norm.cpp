// VJP rules: softmax, log_softmax and the normalisations. They all have decompositions the tape
// could record through, but the closed forms below take a handful of ops instead of a graph of
// a dozen saved intermediates. f16/bf16 are computed in float (like the forward kernels) and
// the gradients rounded once at the end.
#include "ember/autodiff.h"
#include "ember/autodiff/rules.h"
#include "ember/ops/nn_common.h"
#include "ember/ops/norm_route.h"

namespace ember::autodiff {
namespace {

// Input i is given and asks for a gradient (optional inputs may be undefined).
bool wants(const VjpCtx& c, size_t i) {
  return c.needs_grad(i) && i < c.inputs.size() && c.input(i).defined();
}

Tensor upcast(const Tensor& t) {
  const bool half = t.defined() && (t.dtype() == DType::F16 || t.dtype() == DType::BF16);
  return half ? t.to(DType::F32) : t;
}
Tensor cast_like(const Tensor& t, const Tensor& like) {
  return t.dtype() == like.dtype() ? t : t.to(like.dtype());
}
Tensor opt_input(const VjpCtx& c, size_t i) { return c.inputs.size() > i ? c.input(i) : Tensor(); }
Tensor opt_grad(const VjpCtx& c, size_t i) { return c.grads.size() > i ? c.grad(i) : Tensor(); }

// softmax: dx = y * (g - sum(g * y)).
TensorList vjp_softmax(const VjpCtx& c) {
  const Tensor y = upcast(c.output(0)), g = upcast(c.grad(0));
  const Shape dim = {c.attrs.i[0]};
  return {cast_like(y * (g - sum(g * y, dim, true)), c.input(0))};
}

// log_softmax: dx = g - exp(y) * sum(g).
TensorList vjp_log_softmax(const VjpCtx& c) {
  const Tensor y = upcast(c.output(0)), g = upcast(c.grad(0));
  const Shape dim = {c.attrs.i[0]};
  // One row kernel on the lazy device either way: the planner runs the sum before a pointwise
  // op queued ahead of it that it does not read, so exp joins the sum's epilogue.
  return {cast_like(g - exp(y) * sum(g, dim, true), c.input(0))};
}

// x normalised over `dims` (its mean removed, scaled by rstd) has the gradient
// rstd * (gy - mean(gy) - xhat * mean(gy * xhat)) for the normalised output's cotangent gy.
Tensor normalized_grad(const Tensor& gy, const Tensor& xhat, const Tensor& rstd,
                       const Shape& dims) {
  return rstd * addcmul(gy - mean(gy, dims, true), xhat, mean(gy * xhat, dims, true), -1);
}

// The sum over the leading dims that an affine parameter broadcast along.
Tensor sum_lead(const Tensor& t, int64_t lead) {
  if (lead == 0) return t;
  Shape dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  return sum(t, dims);
}

// The input's gradient and xhat come from layer_norm_backward / rms_norm_backward (one row
// kernel each on a fused device; ember/ops/norm_backward.cpp has the closed forms); the affine
// gradients are column sums of g * xhat and g.
TensorList norm_grads(const VjpCtx& c, OpId backward, bool has_bias) {
  const Tensor& x = c.input(0);
  const Tensor w = opt_input(c, 1);
  const int64_t lead = x.dim() - int64_t(c.attrs.ints.size());
  Tensor gx, xhat, gw, gb;
  if (wants(c, 0)) {
    const TensorList r = dispatch(backward, c.attrs, {x, w, c.grad(0)});
    gx = r[0];
    xhat = r[1];
  } else if (wants(c, 1)) {
    xhat = dispatch(backward, c.attrs, {x, Tensor(), c.grad(0)})[1];
  }
  const Tensor g = upcast(c.grad(0));
  if (wants(c, 1)) gw = cast_like(sum_lead(g * xhat, lead), w);
  if (has_bias && wants(c, 2)) gb = cast_like(sum_lead(g, lead), opt_input(c, 2));
  if (has_bias) return {gx, gw, gb};
  return {gx, gw};
}

TensorList vjp_layer_norm(const VjpCtx& c) {
  return norm_grads(c, OpId::layer_norm_backward, true);
}
// rms_norm: y = x * r * w with r = rsqrt(mean(x^2) + eps); no mean is removed.
TensorList vjp_rms_norm(const VjpCtx& c) { return norm_grads(c, OpId::rms_norm_backward, false); }

// [C] -> [1, C, 1, ...] against an [N, C, *] input.
Tensor channel_view(const Tensor& t, int64_t ndim) {
  Shape s(size_t(ndim), 1);
  s[1] = t.size(0);
  return t.reshape(s);
}
// Every dim of an [N, C, *] tensor but the channels.
Shape non_channel_dims(int64_t ndim) {
  Shape dims = {0};
  for (int64_t d = 2; d < ndim; ++d) dims.push_back(d);
  return dims;
}

TensorList vjp_group_norm(const VjpCtx& c) {
  const Tensor& x = c.input(0);
  const Tensor w = opt_input(c, 1), b = opt_input(c, 2);
  if (x.numel() == 0)
    return {zeros_like(x), w.defined() ? zeros_like(w) : w, b.defined() ? zeros_like(b) : b};
  const int64_t n = x.size(0), groups = c.attrs.i[0], nd = x.dim();
  const Shape grouped = {n, groups, -1}, red = {2};
  const Tensor xg = upcast(x).reshape(grouped), g = upcast(c.grad(0));
  const Tensor d = xg - mean(xg, red, true);
  const Tensor rstd = rsqrt(mean(d * d, red, true) + c.attrs.f[0]);
  const Tensor xhat = d * rstd;  // grouped
  Tensor gx, gw, gb;
  if (wants(c, 0)) {
    const Tensor gy = (w.defined() ? g * channel_view(upcast(w), nd) : g).reshape(grouped);
    gx = cast_like(normalized_grad(gy, xhat, rstd, red).reshape(x.shape()), x);
  }
  if (wants(c, 1)) gw = cast_like(sum(g * xhat.reshape(x.shape()), non_channel_dims(nd)), w);
  if (wants(c, 2)) gb = cast_like(sum(g, non_channel_dims(nd)), b);
  return {gx, gw, gb};
}

// batch_norm, inputs (x, running_mean, running_var, weight, bias). Training normalises with the
// batch statistics, which are outputs too (mean, unbiased variance) and may carry cotangents;
// the running statistics do not enter the outputs then. Evaluation normalises with the running
// statistics, which then get gradients like any other input (torch gives them none).
TensorList vjp_batch_norm(const VjpCtx& c) {
  const Tensor& x = c.input(0);
  const Tensor rm = c.input(1), rv = c.input(2), w = opt_input(c, 3), b = opt_input(c, 4);
  const int64_t nd = x.dim();
  const Shape dims = non_channel_dims(nd);
  const Tensor xc = upcast(x), g = upcast(opt_grad(c, 0));
  const Tensor wc = upcast(w);
  auto cv = [nd](const Tensor& t) { return channel_view(t, nd); };
  const double eps = c.attrs.f[0];
  Tensor gx, grm, grv, gw, gb;
  if (c.attrs.b[0]) {
    // The backend's own kernel (cuDNN's on cuda) when only the normalised output has a cotangent.
    // Not while the backward is itself recorded (create_graph): the kernel has no VJP of its own.
    const bool plain = g.defined() && !opt_grad(c, 1).defined() && !opt_grad(c, 2).defined() &&
                       !grad_enabled();
    if (const auto fn = detail::batch_norm_backward(x.device().backend()); plain && fn)
      if (TensorList r = fn(x, w, opt_grad(c, 0), eps); !r.empty()) {
        if (wants(c, 0)) gx = r[0];
        if (wants(c, 3)) gw = cast_like(r[1], w);
        if (wants(c, 4)) gb = cast_like(r[2], b);
        return {gx, grm, grv, gw, gb};
      }
    const double count = double(x.numel() / x.size(1));
    const Tensor d = xc - cv(mean(xc, dims));
    const Tensor rstd = cv(rsqrt(mean(d * d, dims) + eps));
    const Tensor xhat = d * rstd;
    if (wants(c, 0)) {
      Tensor acc;
      auto plus = [&acc](const Tensor& t) { acc = acc.defined() ? acc + t : t; };
      if (g.defined()) plus(normalized_grad(w.defined() ? g * cv(wc) : g, xhat, rstd, dims));
      if (const Tensor gm = upcast(opt_grad(c, 1)); gm.defined())
        plus(cv(gm / count).expand(x.shape()).contiguous());
      if (const Tensor gv = upcast(opt_grad(c, 2)); gv.defined())
        plus(cv(gv) * d * (2.0 / (count - 1)));
      gx = cast_like(acc, x);
    }
    if (g.defined() && wants(c, 3)) gw = cast_like(sum(g * xhat, dims), w);
    if (g.defined() && wants(c, 4)) gb = cast_like(sum(g, dims), b);
    return {gx, grm, grv, gw, gb};
  }
  if (!g.defined()) return {gx, grm, grv, gw, gb};
  const Tensor rstd = rsqrt(upcast(rv) + eps);          // [C]
  const Tensor centered = xc - cv(upcast(rm));
  const Tensor gy = w.defined() ? g * cv(wc) : g;
  if (wants(c, 0)) gx = cast_like(gy * cv(rstd), x);
  if (wants(c, 1)) grm = cast_like(neg(sum(gy, dims) * rstd), rm);
  if (wants(c, 2))
    grv = cast_like(sum(gy * centered, dims) * (rstd * rstd * rstd) * -0.5, rv);
  if (wants(c, 3)) gw = cast_like(sum(g * centered * cv(rstd), dims), w);
  if (wants(c, 4)) gb = cast_like(sum(g, dims), b);
  return {gx, grm, grv, gw, gb};
}

}  // namespace

void register_rules_nn_norm() {
  set_vjp(OpId::softmax, vjp_softmax);
  set_vjp(OpId::log_softmax, vjp_log_softmax);
  set_vjp(OpId::layer_norm, vjp_layer_norm);
  set_vjp(OpId::rms_norm, vjp_rms_norm);
  set_vjp(OpId::group_norm, vjp_group_norm);
  set_vjp(OpId::batch_norm, vjp_batch_norm);
}

}  // namespace ember::autodiff

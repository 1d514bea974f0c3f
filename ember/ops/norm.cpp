// Softmax and normalisation: API, inference, decompositions, registration. The flex backend has
// fused kernels for all of them; the decompositions serve backends without one.
// Attrs: softmax/log_softmax: i[0] dim. layer_norm: ints normalized_shape, f[0] eps; inputs
// (x, weight, bias). rms_norm: ints normalized_shape, f[0] eps when b[0] (else the dtype's
// epsilon); inputs (x, weight). group_norm: i[0] groups, f[0] eps; inputs (x, weight, bias).
// batch_norm: b[0] training, f[0] eps; inputs (x, running_mean, running_var, weight, bias);
// outputs y and, when training, the batch mean and unbiased variance per channel (the API
// updates the running statistics from them, outside the graph, and passes none to the op).
#include "ember/autodiff.h"
#include "ember/backends/backend.h"
#include "ember/ops/nn.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/nn_common.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"
#include "ember/ops/layout.h"

namespace ember {
namespace {

void check_affine(const char* name, const Tensor& t, const Shape& shape, const char* what) {
  if (!t.defined()) return;
  if (t.shape() != shape)
    detail::throw_shape(name, std::string("expected ") + what + " of shape " + shape_str(shape) +
                                  ", found " + shape_str(t.shape()));
  ops::require_float(name, t.dtype(), what);
}

void infer_norm(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.empty()) detail::throw_value(name, "expected an input");
  const Tensor& x = in[0];
  ops::require_defined(x, name);
  ops::require_float(name, x.dtype());
  switch (op) {
    case OpId::softmax: case OpId::log_softmax:
      wrap_dim(a.i[0], x.dim(), name);
      break;
    case OpId::layer_norm: case OpId::rms_norm: {
      const Shape& ns = a.ints;
      const size_t k = ns.size();
      if (k == 0) detail::throw_shape(name, "expected a non-empty normalized_shape");
      bool ok = size_t(x.dim()) >= k;
      for (size_t i = 0; ok && i < k; ++i) ok = x.shape()[x.shape().size() - k + i] == ns[i];
      if (!ok)
        detail::throw_shape(name, "normalized_shape " + shape_str(ns) +
                                      " expects an input of shape [*, " +
                                      shape_str(ns).substr(1) + ", found " + shape_str(x.shape()));
      check_affine(name, in.size() > 1 ? in[1] : Tensor(), ns, "weight");
      if (op == OpId::layer_norm) check_affine(name, in.size() > 2 ? in[2] : Tensor(), ns, "bias");
      break;
    }
    case OpId::group_norm: {
      if (x.dim() < 2)
        detail::throw_shape(name, "expected an input of shape [N, C, *], found " +
                                      shape_str(x.shape()));
      const int64_t g = a.i[0], c = x.size(1);
      if (g <= 0)
        detail::throw_value(name, "num_groups must be positive, found " + std::to_string(g));
      if (c % g != 0)
        detail::throw_shape(
            name, "expected the channel count to be divisible by num_groups, found " +
                      std::to_string(c) + " channels and " + std::to_string(g) + " groups");
      check_affine(name, in[1], {c}, "weight");
      check_affine(name, in[2], {c}, "bias");
      break;
    }
    case OpId::batch_norm: {
      if (x.dim() < 2)
        detail::throw_shape(name, "expected an input of shape [N, C, *], found " +
                                      shape_str(x.shape()));
      const int64_t c = x.size(1);
      check_affine(name, in[1], {c}, "running_mean");
      check_affine(name, in[2], {c}, "running_var");
      check_affine(name, in[3], {c}, "weight");
      check_affine(name, in[4], {c}, "bias");
      const bool training = a.b[0];
      if (!training && (!in[1].defined() || !in[2].defined()))
        detail::throw_value(name, "running_mean and running_var must be given in evaluation mode");
      if (training && x.numel() == c)
        detail::throw_value(name, "expected more than 1 value per channel when training, found "
                                  "input of shape " + shape_str(x.shape()));
      out.add(x.shape(), x.dtype());
      if (training) {
        out.add({c}, x.dtype());
        out.add({c}, x.dtype());
      }
      return;
    }
    default: break;
  }
  out.add(x.shape(), x.dtype());
}

// --- decompositions ---
// f16/bf16 inputs are computed in float and rounded once at the end, like the fused kernels:
// rounding every intermediate (means, deviations) to 8 or 11 bits loses too much.

Tensor upcast(const Tensor& t) {
  const bool half = t.defined() && (t.dtype() == DType::F16 || t.dtype() == DType::BF16);
  return half ? t.to(DType::F32) : t;
}

TensorList softmax_dec(const Tensor& x, int64_t dim, bool log_form) {
  if (x.numel() == 0) return {x.clone()};
  const Tensor xc = upcast(x);
  Tensor z = xc - amax(xc, {dim}, true);
  Tensor s = sum(exp(z), {dim}, true);
  return {(log_form ? z - log(s) : exp(z) / s).to(x.dtype())};
}
TensorList dec_softmax(const Attrs& a, std::span<const Tensor> in) {
  return softmax_dec(in[0], a.i[0], false);
}
TensorList dec_log_softmax(const Attrs& a, std::span<const Tensor> in) {
  return softmax_dec(in[0], a.i[0], true);
}

Shape last_dims(const Tensor& x, size_t k) {
  Shape d;
  for (int64_t i = x.dim() - int64_t(k); i < x.dim(); ++i) d.push_back(i);
  return d;
}
Tensor affine(Tensor y, const Tensor& w, const Tensor& b, DType out) {
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y.to(out);
}

TensorList dec_layer_norm(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  if (x.numel() == 0) return {x.clone()};
  Shape dims = last_dims(x, a.ints.size());
  const Tensor xc = upcast(x);
  Tensor d = xc - mean(xc, dims, true);
  Tensor y = d * rsqrt(mean(d * d, dims, true) + a.f[0]);
  return {affine(y, in.size() > 1 ? in[1] : Tensor(), in.size() > 2 ? in[2] : Tensor(), x.dtype())};
}

TensorList dec_rms_norm(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  if (x.numel() == 0) return {x.clone()};
  Shape dims = last_dims(x, a.ints.size());
  const Tensor xc = upcast(x);
  Tensor y = xc * rsqrt(mean(xc * xc, dims, true) + ops::rms_norm_eps(a, x.dtype()));
  return {affine(y, in.size() > 1 ? in[1] : Tensor(), Tensor(), x.dtype())};
}

// [C] -> [1, C, 1, ...] for broadcasting against an [N, C, *] input.
Tensor channel_view(const Tensor& t, int64_t ndim) {
  if (!t.defined()) return t;
  Shape s(size_t(ndim), 1);
  s[1] = t.size(0);
  return t.reshape(s);
}

TensorList dec_group_norm(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  if (x.numel() == 0) return {x.clone()};
  const int64_t n = x.size(0), g = a.i[0];
  Tensor xg = upcast(x).reshape({n, g, x.numel() / (n * g)});
  Tensor d = xg - mean(xg, {2}, true);
  Tensor y = (d * rsqrt(mean(d * d, {2}, true) + a.f[0])).reshape(x.shape());
  return {affine(y, channel_view(in[1], x.dim()), channel_view(in[2], x.dim()), x.dtype())};
}

TensorList dec_batch_norm(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const int64_t nd = x.dim();
  Shape dims = {0};
  for (int64_t i = 2; i < nd; ++i) dims.push_back(i);
  const Tensor w = channel_view(in[3], nd), b = channel_view(in[4], nd);
  const Tensor xc = upcast(x);
  if (!a.b[0]) {
    Tensor y = (xc - channel_view(in[1], nd)) * rsqrt(channel_view(in[2], nd) + a.f[0]);
    return {affine(y, w, b, x.dtype())};
  }
  const int64_t count = x.numel() / x.size(1);
  Tensor m = mean(xc, dims);
  Tensor d = xc - channel_view(m, nd);
  Tensor var = mean(d * d, dims);
  Tensor y = d * channel_view(rsqrt(var + a.f[0]), nd);
  Tensor unbiased = var * (double(count) / double(count - 1));
  return {affine(y, w, b, x.dtype()), m.to(x.dtype()), unbiased.to(x.dtype())};
}

Tensor norm_call(OpId op, const Attrs& a, std::initializer_list<Tensor> in) {
  return dispatch1(op, a, in);
}

}  // namespace


Tensor softmax(const Tensor& x, int64_t dim) {
  Attrs a;
  a.i[0] = dim;
  return norm_call(OpId::softmax, a, {x});
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  Attrs a;
  a.i[0] = dim;
  return norm_call(OpId::log_softmax, a, {x});
}
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  Attrs a;
  a.ints = normalized_shape;
  a.f[0] = eps;
  return norm_call(OpId::layer_norm, a, {x, weight, bias});
}
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  Attrs a;
  a.ints = normalized_shape;
  a.f[0] = eps.value_or(0);
  a.b[0] = eps.has_value();
  return norm_call(OpId::rms_norm, a, {x, weight});
}
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  Attrs a;
  a.i[0] = num_groups;
  a.f[0] = eps;
  return norm_call(OpId::group_norm, a, {x, weight, bias});
}
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  Attrs a;
  a.b[0] = training;
  a.f[0] = eps;
  if (!training)
    return dispatch(OpId::batch_norm, a, {x, running_mean, running_var, weight, bias})[0];
  // Training normalises with the batch statistics; the running ones are only updated, so they
  // are checked here and left out of the op: autodiff must not save them (the update below would
  // then make backward refuse a "modified" saved tensor) nor record the update (the buffers would
  // require grad and chain every step's graph to the next, as torch's never do).
  if (x.defined() && x.dim() >= 2) {
    check_affine("batch_norm", running_mean, {x.size(1)}, "running_mean");
    check_affine("batch_norm", running_var, {x.size(1)}, "running_var");
  }
  TensorList r = dispatch(OpId::batch_norm, a, {x, Tensor(), Tensor(), weight, bias});
  // Like torch: running = (1 - momentum) * running + momentum * batch statistic (the variance
  // unbiased), written in place so modules see the update through their buffers.
  NoGradGuard no_grad;
  Tensor rm = running_mean, rv = running_var;
  if (rm.defined()) rm.copy_(rm * (1 - momentum) + r[1] * momentum);
  if (rv.defined()) rv.copy_(rv * (1 - momentum) + r[2] * momentum);
  return r[0];
}


namespace ops {
void register_norm_backward_ops();  // norm_backward.cpp
void register_norm_ops() {
  register_norm_backward_ops();
  for (OpId op : {OpId::softmax, OpId::log_softmax, OpId::layer_norm, OpId::rms_norm,
                  OpId::group_norm, OpId::batch_norm})
    op_def_mut(op).infer = infer_norm;
  op_def_mut(OpId::softmax).decompose = dec_softmax;
  op_def_mut(OpId::log_softmax).decompose = dec_log_softmax;
  op_def_mut(OpId::layer_norm).decompose = dec_layer_norm;
  op_def_mut(OpId::rms_norm).decompose = dec_rms_norm;
  op_def_mut(OpId::group_norm).decompose = dec_group_norm;
  op_def_mut(OpId::batch_norm).decompose = dec_batch_norm;
}
}  // namespace ops

}  // namespace ember

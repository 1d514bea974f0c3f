// The backward of layer_norm and rms_norm as ops of their own, which their VJP rules call: the
// input's gradient dx and the normalised input xhat (what the affine parameters' gradients
// need). The decompositions are the closed forms the rules used to spell out, so an eager
// backend computes exactly what it did; a fused device runs each as one row kernel that keeps
// no statistic, normalised value or product of the cotangent in memory
// (ember/fusion/row_norm_backward.cpp).
// Attrs: the forward op's (ints normalized_shape, f[0] eps; rms_norm_backward: b[0] when eps was
// given). Inputs: (x, weight or none, grad_output). Outputs: dx (x's dtype) and xhat (float32
// for float16/bfloat16 inputs, else x's dtype).
#include "ember/backends/backend.h"
#include "ember/ops/binary.h"
#include "ember/ops/common.h"
#include "ember/ops/nn.h"
#include "ember/ops/nn_common.h"
#include "ember/ops/norm_route.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember {
namespace {

bool half(DType d) { return d == DType::F16 || d == DType::BF16; }
Tensor upcast(const Tensor& t) { return t.defined() && half(t.dtype()) ? t.to(DType::F32) : t; }

Shape feature_dims(const Tensor& x, size_t k) {
  Shape d;
  for (int64_t i = x.dim() - int64_t(k); i < x.dim(); ++i) d.push_back(i);
  return d;
}

void infer_norm_backward(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 3) detail::throw_value(name, "expected input, weight and grad_output");
  const Tensor &x = in[0], &w = in[1], &g = in[2];
  ops::require_defined(x, name);
  ops::require_defined(g, name, "grad_output");
  ops::require_float(name, x.dtype());
  ops::require_float(name, g.dtype(), "grad_output");
  const Shape& ns = a.ints;
  bool ok = !ns.empty() && size_t(x.dim()) >= ns.size();
  for (size_t i = 0; ok && i < ns.size(); ++i)
    ok = x.shape()[x.shape().size() - ns.size() + i] == ns[i];
  if (!ok)
    detail::throw_shape(name, "normalized_shape " + shape_str(ns) +
                                  " expects an input of shape [*, " + shape_str(ns).substr(1) +
                                  ", found " + shape_str(x.shape()));
  if (g.shape() != x.shape())
    detail::throw_shape(name, "expected grad_output of the input's shape " + shape_str(x.shape()) +
                                  ", found " + shape_str(g.shape()));
  if (w.defined() && w.shape() != ns)
    detail::throw_shape(
        name, "expected weight of shape " + shape_str(ns) + ", found " + shape_str(w.shape()));
  out.add(x.shape(), x.dtype());
  out.add(x.shape(), half(x.dtype()) ? DType::F32 : x.dtype());
}

TensorList dec_layer_norm_backward(const Attrs& a, std::span<const Tensor> in) {
  const Tensor &x = in[0], &w = in[1], &g = in[2];
  const Shape dims = feature_dims(x, a.ints.size());
  const Tensor xhat = upcast(dispatch1(OpId::layer_norm, a, {x, Tensor(), Tensor()}));
  const Tensor rstd = rsqrt(var(upcast(x), dims, 0, true) + a.f[0]);
  const Tensor gy = w.defined() ? upcast(g) * upcast(w) : upcast(g);
  // rstd * (gy - mean(gy) - xhat * mean(gy * xhat))
  const Tensor dx =
      rstd * addcmul(gy - mean(gy, dims, true), xhat, mean(gy * xhat, dims, true), -1);
  return {dx.to(x.dtype()), xhat};
}

TensorList dec_rms_norm_backward(const Attrs& a, std::span<const Tensor> in) {
  const Tensor &x = in[0], &w = in[1], &g = in[2];
  const Shape dims = feature_dims(x, a.ints.size());
  const Tensor xc = upcast(x);
  const Tensor r = rsqrt(mean(xc * xc, dims, true) + ops::rms_norm_eps(a, x.dtype()));
  const Tensor xhat = xc * r;
  const Tensor gy = w.defined() ? upcast(g) * upcast(w) : upcast(g);
  // r * (gy - xhat * mean(gy * xhat)): no mean is removed
  const Tensor dx = r * addcmul(gy, xhat, mean(gy * xhat, dims, true), -1);
  return {dx.to(x.dtype()), xhat};
}

}  // namespace

namespace ops {
void register_norm_backward_ops() {
  for (OpId op : {OpId::layer_norm_backward, OpId::rms_norm_backward})
    op_def_mut(op).infer = infer_norm_backward;
  op_def_mut(OpId::layer_norm_backward).decompose = dec_layer_norm_backward;
  op_def_mut(OpId::rms_norm_backward).decompose = dec_rms_norm_backward;
}
}  // namespace ops

namespace detail {
namespace {
BatchNormBackwardFn g_bn_backward[kNumBackends] = {};
}
void set_batch_norm_backward(Backend b, BatchNormBackwardFn fn) { g_bn_backward[int(b)] = fn; }
BatchNormBackwardFn batch_norm_backward(Backend b) { return g_bn_backward[int(b)]; }
}  // namespace detail

}  // namespace ember

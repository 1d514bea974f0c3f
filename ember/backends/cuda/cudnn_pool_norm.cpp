// cuDNN pooling (max_pool1d/2d without indices, avg_pool1d/2d) and batch norm (training: the
// batch statistics; evaluation: the running ones) forward kernels.
//
// Pooling: cuDNN has no dilation, no ceil mode and no indices, so max pooling that returns
// indices (what its VJP asks for), dilated windows and a ceil_mode that adds a window run the
// kernel of index_ops.cpp (average pooling of those shapes: the host fallback); max pooling
// ignores the padding and propagates NaN, average pooling counts the padding as
// count_include_pad says, as torch does. 1-d runs as 2-d with a unit height; packed
// NCHW or NHWC inputs are read in place.
//
// Batch norm runs per channel over [N, C, *] (up to 3 spatial dims) in cuDNN's spatial mode. In
// training cuDNN's running-average update with factor 1 writes exactly the batch mean and the
// unbiased variance, the op's second and third outputs (the API updates the module's running
// buffers from them). The affine parameters and statistics are f32 for every input dtype, as
// cuDNN wants; a missing weight or bias is ones or zeros.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/cudnn_runtime.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/loops.h"
#include "ember/error.h"
#include "ember/kl/user_op.h"
#include "ember/kl/user_op_impl.h"
#include "ember/ops/nn_common.h"
#include "ember/ops/norm_route.h"

namespace ember::cuda {
namespace {

std::mutex g_mu;  // calls on the per-device handles

// Dims and packed strides of a 4-d/5-d NCHW-ordered view, NCHW or channels-last in memory.
void describe(const Tensor& t, bool nhwc, TensorDesc& d, const char* op) {
  int dims[5], st[5];
  const int nd = int(t.dim());
  for (int i = 0; i < nd; ++i) dims[i] = int(t.size(i));
  if (!nhwc) {
    for (int i = nd - 1, s = 1; i >= 0; --i) st[i] = s, s *= dims[i];
  } else {
    int s = 1;
    st[1] = s, s *= dims[1];
    for (int i = nd - 1; i >= 2; --i) st[i] = s, s *= dims[i];
    st[0] = s;
  }
  d.set(dnn_type(t.dtype()), nd, dims, st, op);
}

bool nhwc_packed(const Tensor& t) {
  return !t.is_contiguous() && t.dim() == 4 && t.permute({0, 2, 3, 1}).is_contiguous();
}

bool small(const Tensor& t) { return t.numel() > 0 && t.numel() < INT32_MAX; }

// cuDNN pooling of x ([N, C, H, W], or [C, H, W] / 1-d forms as k_pool passes them) into an
// output of NCHW-order shape `os`.
TensorList dnn_pool(const OpCall& c, const Tensor& x, int nd, cudnnPoolingMode_t mode,
                    const int (&win)[2], const int (&pad)[2], const int (&stride)[2],
                    int64_t oh, int64_t ow, const char* op);

TensorList k_pool(const OpCall& c) {
  const char* op = op_name(c.op);
  const bool is_max = c.op == OpId::max_pool1d || c.op == OpId::max_pool2d;
  const int nd = c.op == OpId::max_pool2d || c.op == OpId::avg_pool2d ? 2 : 1;
  // Max pooling cuDNN cannot serve (indices, dilation, ceil_mode, no cuDNN) has its own kernel.
  if (is_max && small(c.inputs[0]) && (c.attrs.b[1] || !cudnn_available()))
    return max_pool_with_indices(c);
  if (!cudnn_available()) return dnn_fallback(c, cudnn_unavailable_reason().c_str());
  const ops::PoolParams p = ops::pool_params(op, c.attrs, nd, is_max);
  const Tensor& x = c.inputs[0];
  const int64_t h = nd == 2 ? x.size(-2) : 1, w = x.size(-1);
  const Shape& os = c.meta.m[0].shape;
  const int64_t oh = nd == 2 ? os[os.size() - 2] : 1, ow = os.back();
  const bool floor_sizes = (h + 2 * p.ph - p.kh) / p.sh + 1 == oh && (w + 2 * p.pw - p.kw) / p.sw + 1 == ow;
  if (is_max && small(x) && (p.dh != 1 || p.dw != 1 || !floor_sizes))
    return max_pool_with_indices(c);
  if (p.dh != 1 || p.dw != 1 || !floor_sizes || !small(x))
    return dnn_fallback(c, "cuDNN pooling has no dilation and no ceil_mode window");
  const cudnnPoolingMode_t mode = is_max ? CUDNN_POOLING_MAX
                                  : c.attrs.b[1] ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                 : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  const int win[2] = {int(p.kh), int(p.kw)}, pad[2] = {int(p.ph), int(p.pw)},
            stride[2] = {int(p.sh), int(p.sw)};
  return dnn_pool(c, x, nd, mode, win, pad, stride, oh, ow, op);
}

TensorList dnn_pool(const OpCall& c, const Tensor& x, int nd, cudnnPoolingMode_t mode,
                    const int (&win)[2], const int (&pad)[2], const int (&stride)[2],
                    int64_t oh, int64_t ow, const char* op) {
  const Shape& os = c.meta.m[0].shape;
  Tensor x4 = x.dim() == nd + 2 ? x : x.unsqueeze(0);
  if (nd == 1) x4 = x4.unsqueeze(2);
  const bool nhwc = nd == 2 && x.dim() == 4 && nhwc_packed(x4);
  if (!nhwc && !x4.is_contiguous()) x4 = x4.contiguous();
  Tensor out;
  if (nhwc) {
    out = detail::empty_tensor({x4.size(0), oh, ow, x4.size(1)}, x.dtype(), c.device).permute({0, 3, 1, 2});
  } else {
    out = c.out.empty() ? detail::empty_tensor(os, x.dtype(), c.device) : c.out[0];
  }
  Tensor o4 = out.dim() == nd + 2 ? out : out.unsqueeze(0);
  if (nd == 1) o4 = o4.unsqueeze(2);
  const int dev = c.device.index();
  std::lock_guard lock(g_mu);
  set_device(dev);
  PoolDesc pd;
  check_dnn(cudnn()->cudnnSetPoolingNdDescriptor(pd.d, mode, CUDNN_PROPAGATE_NAN, 2, win, pad, stride),
            op, "cudnnSetPoolingNdDescriptor");
  TensorDesc xd, yd;
  describe(x4, nhwc, xd, op);
  describe(o4, nhwc, yd, op);
  const float one = 1.f, zero = 0.f;
  check_dnn(cudnn()->cudnnPoolingForward(dnn_handle(dev), pd.d, &one, xd.d, device_ptr(x4), &zero,
                                         yd.d, device_ptr(o4)),
            op, "cudnnPoolingForward");
  after_launch(op, dev);
  note_dnn_served();
  return {out};
}

// adaptive_avg_pool1d/2d whose output size divides the input's: every window has the same
// extent (in / out) and stride, which is plain average pooling (torch's windows are
// [floor(i * in / out), ceil((i + 1) * in / out)), exactly those then). Other sizes: the host.
TensorList k_adaptive_avg_pool(const OpCall& c) {
  const char* op = op_name(c.op);
  const int nd = c.op == OpId::adaptive_avg_pool2d ? 2 : 1;
  const Tensor& x = c.inputs[0];
  const Shape& os = c.meta.m[0].shape;
  const int64_t h = nd == 2 ? x.size(-2) : 1, w = x.size(-1);
  const int64_t oh = nd == 2 ? os[os.size() - 2] : 1, ow = os.back();
  if (!cudnn_available()) return dnn_fallback(c, cudnn_unavailable_reason().c_str());
  if (!small(x) || oh == 0 || ow == 0 || h % oh || w % ow)
    return dnn_fallback(c, "cuDNN pooling serves adaptive sizes that divide the input's only");
  const int win[2] = {int(h / oh), int(w / ow)}, pad[2] = {0, 0};
  return dnn_pool(c, x, nd, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, win, pad, win, oh, ow, op);
}

// A [C] f32 copy of `t` on the device, or `fill` everywhere when t is undefined.
Tensor f32_param(const Tensor& t, int64_t c, double fill, Device dev, const char* op) {
  if (t.defined() && t.dtype() == DType::F32 && t.is_contiguous()) return t;
  Tensor r = detail::empty_tensor({c}, DType::F32, dev);
  copy_into(r, t.defined() ? t : detail::constant_tensor(Scalar(fill), DType::F32, dev, false), op);
  return r;
}

Tensor as_dtype(const Tensor& t, DType d, Device dev, const char* op) {
  if (t.dtype() == d) return t;
  Tensor r = detail::empty_tensor(t.shape(), d, dev);
  copy_into(r, t, op);
  return r;
}

// The descriptors of a packed [N, C, H, W(, D)] batch-norm input and of its per-channel
// parameters (spatial mode).
void bn_descriptors(const Tensor& x4, TensorDesc& xd, TensorDesc& bnd, const char* op) {
  describe(x4, false, xd, op);
  check_dnn(cudnn()->cudnnDeriveBNTensorDescriptor(bnd.d, xd.d, CUDNN_BATCHNORM_SPATIAL), op,
            "cudnnDeriveBNTensorDescriptor");
}

TensorList k_batch_norm(const OpCall& c) {
  if (!cudnn_available()) return dnn_fallback(c, cudnn_unavailable_reason().c_str());
  const char* op = "batch_norm";
  const Tensor& x = c.inputs[0];
  const bool training = c.attrs.b[0];
  const double eps = c.attrs.f[0];
  if (x.dim() > 5 || !small(x) || eps < CUDNN_BN_MIN_EPSILON)
    return dnn_fallback(c, "cuDNN batch norm takes up to 3 spatial dims and eps >= 1e-5");
  const int64_t ch = x.size(1);
  Shape s4 = x.shape();
  while (s4.size() < 4) s4.push_back(1);
  const Tensor xc = (x.is_contiguous() ? x : x.contiguous()).reshape(s4);
  Tensor y = c.out.empty() ? detail::empty_tensor(x.shape(), x.dtype(), c.device) : c.out[0];
  const Tensor y4 = y.reshape(s4);
  const Device dev = c.device;
  const Tensor scale = f32_param(c.inputs[3], ch, 1.0, dev, op);
  const Tensor bias = f32_param(c.inputs[4], ch, 0.0, dev, op);
  std::unique_lock lock(g_mu);
  set_device(dev.index());
  TensorDesc xd, bnd;
  bn_descriptors(xc, xd, bnd, op);
  const float one = 1.f, zero = 0.f;
  cudnnHandle_t h = dnn_handle(dev.index());
  if (!training) {
    const Tensor mean = f32_param(c.inputs[1], ch, 0.0, dev, op);
    const Tensor var = f32_param(c.inputs[2], ch, 1.0, dev, op);
    check_dnn(cudnn()->cudnnBatchNormalizationForwardInference(
                  h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd.d, device_ptr(xc), xd.d,
                  device_ptr(y4), bnd.d, device_ptr(scale), device_ptr(bias), device_ptr(mean),
                  device_ptr(var), eps),
              op, "cudnnBatchNormalizationForwardInference");
    after_launch(op, dev.index());
    note_dnn_served();
    return {y};
  }
  // The "running" statistics start at zero, so that factor 1 leaves exactly the batch's.
  Tensor mean = f32_param(Tensor(), ch, 0.0, dev, op), var = f32_param(Tensor(), ch, 0.0, dev, op);
  check_dnn(cudnn()->cudnnBatchNormalizationForwardTraining(
                h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd.d, device_ptr(xc), xd.d,
                device_ptr(y4), bnd.d, device_ptr(scale), device_ptr(bias), 1.0, device_ptr(mean),
                device_ptr(var), eps, nullptr, nullptr),
            op, "cudnnBatchNormalizationForwardTraining");
  after_launch(op, dev.index());
  note_dnn_served();
  lock.unlock();
  return {y, as_dtype(mean, x.dtype(), dev, op), as_dtype(var, x.dtype(), dev, op)};
}

// batch_norm's backward in training mode (ember/ops/norm_route.h) as the user op
// "cuda.batch_norm_backward": inputs (x, dy[, weight]), parameter eps; outputs dx (x's dtype) and
// float32 dweight, dbias [C]. cuDNN recomputes the batch statistics from x.
int g_bn_backward = -1;

TensorList run_batch_norm_backward(const OpCall& c) {
  const char* op = "batch_norm";
  const Tensor& x = c.inputs[0];
  const double eps = kl::detail::user_op_params(c.attrs)[0];
  const Device dev = c.device.without_layers();
  const int64_t ch = x.size(1);
  Shape s4 = x.shape();
  while (s4.size() < 4) s4.push_back(1);
  const Tensor xc = (x.is_contiguous() ? x : x.contiguous()).reshape(s4);
  Tensor dy = as_dtype(c.inputs[1], x.dtype(), dev, op);
  dy = (dy.is_contiguous() ? dy : dy.contiguous()).reshape(s4);
  const Tensor scale = f32_param(c.inputs.size() > 2 ? c.inputs[2] : Tensor(), ch, 1.0, dev, op);
  Tensor dx = flex::new_output(c, 0), dw = flex::new_output(c, 1), db = flex::new_output(c, 2);
  Tensor dxw = dx.is_contiguous() ? dx : detail::empty_tensor(x.shape(), x.dtype(), dev);
  const Tensor dx4 = dxw.reshape(s4);
  std::unique_lock lock(g_mu);
  set_device(dev.index());
  TensorDesc xd, bnd;
  bn_descriptors(xc, xd, bnd, op);
  const float one = 1.f, zero = 0.f;
  check_dnn(cudnn()->cudnnBatchNormalizationBackward(
                dnn_handle(dev.index()), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, xd.d,
                device_ptr(xc), xd.d, device_ptr(dy), xd.d, device_ptr(dx4), bnd.d,
                device_ptr(scale), device_ptr(dw), device_ptr(db), eps, nullptr, nullptr),
            op, "cudnnBatchNormalizationBackward");
  after_launch(op, dev.index());
  note_dnn_served();
  lock.unlock();
  if (dxw.impl() != dx.impl()) copy_into(dx, dxw, op);
  return {dx, dw, db};
}

kl::UserKernel cuda_only(const kl::UserCall& c) {
  ember::detail::throw_not_implemented(std::string(c.name).c_str(), "runs on cuda tensors only");
}

bool bn_route_off() {
  static const bool off = [] {
    const char* e = std::getenv("EMBER_CUDA_BN_BACKWARD");
    return e && std::strcmp(e, "0") == 0;
  }();
  return off;
}

TensorList batch_norm_backward_route(const Tensor& x, const Tensor& w, const Tensor& dy,
                                     double eps) {
  const DType dt = x.dtype();
  if (bn_route_off() || !cudnn_available() ||
      (dt != DType::F32 && dt != DType::F16 && dt != DType::BF16) || x.dim() < 2 ||
      x.dim() > 5 || !small(x) || eps < CUDNN_BN_MIN_EPSILON || dy.shape() != x.shape() ||
      (w.defined() && (w.dim() != 1 || w.size(0) != x.size(1))))
    return {};
  static std::once_flag once;
  std::call_once(once, [] {
    kl::UserOpDef d;
    d.name = "cuda.batch_norm_backward";
    d.params = {"eps"};
    d.infer = [](std::span<const Tensor> in, std::span<const double>) {
      const Shape c = {in[0].size(1)};
      return std::vector<TensorMeta>{
          {in[0].shape(), in[0].dtype()}, {c, DType::F32}, {c, DType::F32}};
    };
    d.kernel = cuda_only;
    g_bn_backward = kl::register_op(std::move(d)).id();
    set_user_kernel(g_bn_backward, run_batch_norm_backward);
  });
  const UserOp op(g_bn_backward);
  return w.defined() ? op.call({x, dy, w}, {eps}) : op.call({x, dy}, {eps});
}

}  // namespace

void register_cudnn_pool_norm_kernels(BackendImpl& b) {
  constexpr DTypeMask kDnn = mask_of(DType::F32) | mask_of(DType::F16) | mask_of(DType::BF16);
  for (OpId op : {OpId::max_pool1d, OpId::max_pool2d, OpId::avg_pool1d, OpId::avg_pool2d})
    b.set_kernel(op, k_pool, kDnn);
  b.set_kernel(OpId::batch_norm, k_batch_norm, kDnn);
  for (OpId op : {OpId::adaptive_avg_pool1d, OpId::adaptive_avg_pool2d})
    b.set_kernel(op, k_adaptive_avg_pool, kDnn);
  detail::set_batch_norm_backward(Backend::Cuda, batch_norm_backward_route);
}

}  // namespace ember::cuda

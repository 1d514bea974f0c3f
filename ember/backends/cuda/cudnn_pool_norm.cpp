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

#include <mutex>

#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/cudnn_runtime.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/flex/flex.h"
#include "ember/error.h"
#include "ember/ops/nn_common.h"

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
  const cudnnPoolingMode_t mode = is_max ? CUDNN_POOLING_MAX
                                  : c.attrs.b[1] ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                 : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  const int win[2] = {int(p.kh), int(p.kw)}, pad[2] = {int(p.ph), int(p.pw)},
            stride[2] = {int(p.sh), int(p.sw)};
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
  describe(xc, false, xd, op);
  check_dnn(cudnn()->cudnnDeriveBNTensorDescriptor(bnd.d, xd.d, CUDNN_BATCHNORM_SPATIAL), op,
            "cudnnDeriveBNTensorDescriptor");
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

}  // namespace

void register_cudnn_pool_norm_kernels(BackendImpl& b) {
  constexpr DTypeMask kDnn = mask_of(DType::F32) | mask_of(DType::F16) | mask_of(DType::BF16);
  for (OpId op : {OpId::max_pool1d, OpId::max_pool2d, OpId::avg_pool1d, OpId::avg_pool2d})
    b.set_kernel(op, k_pool, kDnn);
  b.set_kernel(OpId::batch_norm, k_batch_norm, kDnn);
}

}  // namespace ember::cuda

// cuDNN convolutions: conv1d/2d/3d forward, conv_transpose1d/2d and conv_input_grad as cuDNN's
// backward data, conv_weight_grad as its backward filter (the classic cudnnConvolution* API).
//
// Every call is described as one convolution x [n, c, sp...] -> y [n, k, sp'...] with a filter
// [k, c/groups, ks...]: the forward computes y, backward data x (a transposed convolution's
// result is that x), backward filter the filter. 1-d runs as 2-d with a unit height. Tensors
// are packed NCHW, or channels-last (NHWC / NDHWC) when the main input already is (then every
// operand and the result are channels-last); other strides are copied to one of those first.
//
// Plans (descriptors, the algorithm cudnnGet*Algorithm_v7 ranks first among those within the
// workspace limit and the precision policy, and its workspace size) are cached per problem:
// shapes, layout, dtype, direction and the TF32 setting. f32 runs without TF32 (CUDNN_FMA_MATH)
// unless cuda::set_allow_tf32(true), the switch cuBLASLt's products use; f16/bf16 accumulate in
// f32. Workspaces come from ember's stream-ordered pool. Calls cuDNN cannot describe
// (asymmetric "same" padding, an output_padding of stride or more, empty or huge tensors) and
// every call when cuDNN is not loaded go to the host fallback.
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <vector>

#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/cudnn_runtime.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/error.h"
#include "ember/ops/conv.h"

namespace ember::cuda {
namespace {

using Geo = ops::ConvGeometry;
constexpr size_t kMaxWorkspace = size_t(1) << 30;

enum class Dir : int { Fwd, BwdData, BwdFilter };

struct Problem {
  Dir dir = Dir::Fwd;
  DType dt = DType::F32;
  int nd = 4;                  // 4 or 5 dims
  int x[5]{}, y[5]{}, w[5]{};  // [n, c, sp...], [n, k, sp...], [k, c/g, ks...]
  int pad[3]{}, stride[3]{}, dil[3]{};
  int groups = 1;
  bool nhwc = false, tf32 = false;
  int dev = 0;
  std::vector<int64_t> key() const {
    std::vector<int64_t> k{int64_t(dir), int64_t(dt), nd, groups, nhwc, tf32, dev};
    for (int i = 0; i < nd; ++i) k.insert(k.end(), {x[i], y[i], w[i]});
    for (int i = 0; i < nd - 2; ++i) k.insert(k.end(), {pad[i], stride[i], dil[i]});
    return k;
  }
};

struct Plan {
  TensorDesc xd, yd;
  FilterDesc wd;
  ConvDesc cd;
  int algo = 0;
  size_t ws = 0;
  bool ok = false;
};

// Packed strides of dims d (NCHW order) in NCHW or channels-last memory.
void packed_strides(const int* d, int nd, bool nhwc, int* s) {
  if (!nhwc) {
    for (int i = nd - 1, st = 1; i >= 0; --i) s[i] = st, st *= d[i];
    return;
  }
  int st = 1;
  s[1] = st, st *= d[1];
  for (int i = nd - 1; i >= 2; --i) s[i] = st, st *= d[i];
  s[0] = st;
}

// f32 without TF32, and f64, take no tensor-core algorithm.
bool fma_only(const Problem& p) { return (p.dt == DType::F32 && !p.tf32) || p.dt == DType::F64; }
bool math_allowed(const Problem& p, cudnnMathType_t m) {
  return !(fma_only(p) && m != CUDNN_FMA_MATH && m != CUDNN_DEFAULT_MATH);
}

// cuDNN's scaling factors are doubles for double data, floats otherwise.
struct Scale {
  float f[2] = {1.f, 0.f};
  double d[2] = {1.0, 0.0};
  const void* one(DType t) const {
    return t == DType::F64 ? static_cast<const void*>(&d[0]) : &f[0];
  }
  const void* zero(DType t) const {
    return t == DType::F64 ? static_cast<const void*>(&d[1]) : &f[1];
  }
};

template <class Perf>
bool pick(const Problem& p, const Perf* perf, int n, Plan& pl) {
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspace &&
        math_allowed(p, perf[i].mathType)) {
      pl.algo = int(perf[i].algo);
      check_dnn(cudnn()->cudnnSetConvolutionMathType(pl.cd.d, perf[i].mathType), "conv",
                "cudnnSetConvolutionMathType");
      return true;
    }
  return false;
}

void build(Plan& pl, const Problem& p, const char* op) {
  const CudnnApi& a = *cudnn();
  const cudnnDataType_t t = dnn_type(p.dt);
  int xs[5], ys[5];
  packed_strides(p.x, p.nd, p.nhwc, xs);
  packed_strides(p.y, p.nd, p.nhwc, ys);
  pl.xd.set(t, p.nd, p.x, xs, op);
  pl.yd.set(t, p.nd, p.y, ys, op);
  check_dnn(a.cudnnSetFilterNdDescriptor(pl.wd.d, t, p.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                         p.nd, p.w),
            op, "cudnnSetFilterNdDescriptor");
  check_dnn(a.cudnnSetConvolutionNdDescriptor(
                pl.cd.d, p.nd - 2, p.pad, p.stride, p.dil, CUDNN_CROSS_CORRELATION,
                p.dt == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
            op, "cudnnSetConvolutionNdDescriptor");
  check_dnn(a.cudnnSetConvolutionGroupCount(pl.cd.d, p.groups), op,
            "cudnnSetConvolutionGroupCount");
  const cudnnMathType_t math = fma_only(p) ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  check_dnn(a.cudnnSetConvolutionMathType(pl.cd.d, math), op, "cudnnSetConvolutionMathType");
  cudnnHandle_t h = dnn_handle(p.dev);
  int n = 0;
  if (p.dir == Dir::Fwd) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    check_dnn(a.cudnnGetConvolutionForwardAlgorithm_v7(h, pl.xd.d, pl.wd.d, pl.cd.d, pl.yd.d,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf),
              op, "cudnnGetConvolutionForwardAlgorithm_v7");
    if (!pick(p, perf, n, pl)) return;
    check_dnn(a.cudnnGetConvolutionForwardWorkspaceSize(h, pl.xd.d, pl.wd.d, pl.cd.d, pl.yd.d,
                                                        cudnnConvolutionFwdAlgo_t(pl.algo), &pl.ws),
              op, "cudnnGetConvolutionForwardWorkspaceSize");
  } else if (p.dir == Dir::BwdData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    check_dnn(
        a.cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, pl.wd.d, pl.yd.d, pl.cd.d, pl.xd.d, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf),
        op, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    if (!pick(p, perf, n, pl)) return;
    check_dnn(
        a.cudnnGetConvolutionBackwardDataWorkspaceSize(
            h, pl.wd.d, pl.yd.d, pl.cd.d, pl.xd.d, cudnnConvolutionBwdDataAlgo_t(pl.algo), &pl.ws),
        op, "cudnnGetConvolutionBackwardDataWorkspaceSize");
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    check_dnn(a.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                  h, pl.xd.d, pl.yd.d, pl.cd.d, pl.wd.d, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                  &n, perf),
              op, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    if (!pick(p, perf, n, pl)) return;
    check_dnn(a.cudnnGetConvolutionBackwardFilterWorkspaceSize(
                  h, pl.xd.d, pl.yd.d, pl.cd.d, pl.wd.d, cudnnConvolutionBwdFilterAlgo_t(pl.algo),
                  &pl.ws),
              op, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  }
  pl.ok = true;
}

std::mutex g_mu;  // the plan cache, and calls on the per-device handles

// Plans are kept for the process (never destroyed: the library may be gone at exit).
Plan* plan_for(const Problem& p, const char* op) {
  static auto* cache = new std::map<std::vector<int64_t>, Plan*>;
  const auto k = p.key();
  auto it = cache->find(k);
  note_dnn_plan(it != cache->end());
  if (it != cache->end()) return it->second;
  set_device(p.dev);
  auto* pl = new Plan;
  build(*pl, p, op);
  cache->emplace(k, pl);
  return pl;
}

// `t` packed in the chosen layout (a copy on the device when it is not).
Tensor packed(const Tensor& t, bool nhwc) {
  if (!nhwc) return t.is_contiguous() ? t : t.contiguous();
  if (ops::channels_last(t)) return t;
  Shape to = {0}, back = {0, t.dim() - 1};
  for (int64_t i = 2; i < t.dim(); ++i) to.push_back(i), back.push_back(i - 1);
  to.push_back(1);
  return t.permute(to).contiguous().permute(back);
}

// A fresh tensor of `shape` (NCHW order) in the chosen layout.
Tensor fresh(const Shape& shape, DType dt, Device dev, bool nhwc) {
  if (!nhwc) return detail::empty_tensor(shape, dt, dev);
  Shape s = {shape[0]}, back = {0, int64_t(shape.size()) - 1};
  for (size_t i = 2; i < shape.size(); ++i) s.push_back(shape[i]), back.push_back(int64_t(i) - 1);
  s.push_back(shape[1]);
  return detail::empty_tensor(s, dt, dev).permute(back);
}

// Batched 4-d/5-d view of an [n, c, sp...] (or unbatched [c, sp...]) tensor: 1-d gets a unit H.
Tensor as_nd(const Tensor& t, const Geo& g, bool batched) {
  Tensor r = batched ? t : t.unsqueeze(0);
  return g.nsp == 1 ? r.unsqueeze(2) : r;
}

bool fits(int64_t v) { return v > 0 && v <= INT32_MAX; }

// The problem's geometry from ember's (slots 1-2 for 1-d and 2-d, 0-2 for 3-d); false when cuDNN
// cannot describe it: sizes that do not follow its output formula, empty or too large tensors.
bool describe(const Geo& g, const Geo::Dims& xsp, const Geo::Dims& ysp, Problem& p) {
  p.nd = g.nsp == 3 ? 5 : 4;
  const int first = g.nsp == 3 ? 0 : 1;
  p.groups = int(g.groups);
  int64_t xn = g.n * g.c_in, yn = g.n * g.c_out, wn = g.c_out * (g.c_in / g.groups);
  if (!fits(g.n) || !fits(g.c_in) || !fits(g.c_out)) return false;
  p.x[0] = p.y[0] = int(g.n);
  p.x[1] = int(g.c_in), p.y[1] = int(g.c_out);
  p.w[0] = int(g.c_out), p.w[1] = int(g.c_in / g.groups);
  for (int s = first; s < 3; ++s) {
    const size_t j = size_t(s);
    const int64_t span = g.dilation[j] * (g.kernel[j] - 1) + 1;
    if (xsp[j] + 2 * g.pad[j] < span || (xsp[j] + 2 * g.pad[j] - span) / g.stride[j] + 1 != ysp[j])
      return false;
    const int i = 2 + s - first;
    if (!fits(xsp[j]) || !fits(ysp[j]) || !fits(g.kernel[j])) return false;
    p.x[i] = int(xsp[j]), p.y[i] = int(ysp[j]), p.w[i] = int(g.kernel[j]);
    p.pad[i - 2] = int(g.pad[j]), p.stride[i - 2] = int(g.stride[j]),
              p.dil[i - 2] = int(g.dilation[j]);
    xn *= xsp[j], yn *= ysp[j], wn *= g.kernel[j];
  }
  return xn < INT32_MAX && yn < INT32_MAX && wn < INT32_MAX;
}

void add_bias(const Problem& p, const Tensor& bias, void* out, const TensorDesc& od,
              const char* op) {
  int d[5] = {1, 1, 1, 1, 1}, s[5];
  d[1] = int(bias.numel());
  packed_strides(d, p.nd, false, s);
  TensorDesc bd;
  bd.set(dnn_type(p.dt), p.nd, d, s, op);
  const Scale k;
  const Tensor b = bias.is_contiguous() ? bias : bias.contiguous();
  check_dnn(cudnn()->cudnnAddTensor(dnn_handle(p.dev), k.one(p.dt), bd.d, device_ptr(b),
                                    k.one(p.dt), od.d, out),
            op, "cudnnAddTensor (bias)");
}

// Runs plan `pl` of `p`: x, w, y are device pointers; the direction says which is written.
void run(const Problem& p, const Plan& pl, const void* x, const void* w, const void* y, void* out,
         const char* op) {
  const CudnnApi& a = *cudnn();
  cudnnHandle_t h = dnn_handle(p.dev);
  Workspace ws(pl.ws, p.dev);
  const Scale k;
  const void *one = k.one(p.dt), *zero = k.zero(p.dt);
  if (p.dir == Dir::Fwd)
    check_dnn(a.cudnnConvolutionForward(h, one, pl.xd.d, x, pl.wd.d, w, pl.cd.d,
                                        cudnnConvolutionFwdAlgo_t(pl.algo), ws.ptr(), pl.ws, zero,
                                        pl.yd.d, out),
              op, "cudnnConvolutionForward");
  else if (p.dir == Dir::BwdData)
    check_dnn(a.cudnnConvolutionBackwardData(h, one, pl.wd.d, w, pl.yd.d, y, pl.cd.d,
                                             cudnnConvolutionBwdDataAlgo_t(pl.algo), ws.ptr(),
                                             pl.ws, zero, pl.xd.d, out),
              op, "cudnnConvolutionBackwardData");
  else
    check_dnn(a.cudnnConvolutionBackwardFilter(h, one, pl.xd.d, x, pl.yd.d, y, pl.cd.d,
                                               cudnnConvolutionBwdFilterAlgo_t(pl.algo), ws.ptr(),
                                               pl.ws, zero, pl.wd.d, out),
              op, "cudnnConvolutionBackwardFilter");
  after_launch(op, p.dev);
  note_dnn_served();
}

// The cached plan of `p` with `lock` (on g_mu) taken and p's device current, or null with the
// lock released when cuDNN has no algorithm (the host fallback may run convolutions itself).
Plan* locked_plan(const Problem& p, const char* op, std::unique_lock<std::mutex>& lock) {
  lock.lock();
  Plan* pl = plan_for(p, op);
  if (!pl->ok) {
    lock.unlock();
    return nullptr;
  }
  set_device(p.dev);
  return pl;
}

const char* kCannot =
    "cuDNN cannot describe this convolution (asymmetric padding, an output "
    "size its formula does not give, an empty or too large tensor)";

Tensor placed_or(const OpCall& c, const Shape& shape, bool nhwc) {
  if (!nhwc && !c.out.empty()) return c.out[0];
  return fresh(shape, c.meta.m[0].dtype, c.device, nhwc);
}

TensorList k_conv(const OpCall& c) {
  if (!cudnn_available()) return dnn_fallback(c, cudnn_unavailable_reason().c_str());
  const char* op = op_name(c.op);
  const bool transposed = c.op == OpId::conv_transpose1d || c.op == OpId::conv_transpose2d;
  const Geo g = ops::conv_geometry(c.op, c.attrs, c.inputs);
  Problem p;
  p.dt = c.inputs[0].dtype(), p.dev = c.device.index(), p.tf32 = tf32_allowed();
  p.dir = transposed ? Dir::BwdData : Dir::Fwd;
  // A transposed convolution's result is the x of the convolution it is the adjoint of.
  Geo cg = g;
  if (transposed) std::swap(cg.c_in, cg.c_out);
  const bool ok = transposed ? describe(cg, g.out, g.in, p) : describe(g, g.in, g.out, p);
  if (!ok) return dnn_fallback(c, kCannot);
  const Tensor x = as_nd(c.inputs[0], g, g.batched);
  p.nhwc = g.nsp > 1 && ops::channels_last(x);
  const Tensor xp = packed(x, p.nhwc),
               wp = packed(g.nsp == 1 ? c.inputs[1].unsqueeze(2) : c.inputs[1], p.nhwc);
  Tensor out = placed_or(c, c.meta.m[0].shape, p.nhwc);
  const Tensor o = as_nd(out, g, g.batched);
  std::unique_lock lock(g_mu, std::defer_lock);
  Plan* pl = locked_plan(p, op, lock);
  if (!pl) return dnn_fallback(c, "cuDNN has no algorithm for this convolution");
  if (transposed)
    run(p, *pl, nullptr, device_ptr(wp), device_ptr(xp), device_ptr(o), op);
  else
    run(p, *pl, device_ptr(xp), device_ptr(wp), nullptr, device_ptr(o), op);
  if (c.inputs[2].defined())
    add_bias(p, c.inputs[2], device_ptr(o), transposed ? pl->xd : pl->yd, op);
  return {out};
}

TensorList k_conv_grad(const OpCall& c) {
  if (!cudnn_available()) return dnn_fallback(c, cudnn_unavailable_reason().c_str());
  const char* op = op_name(c.op);
  const bool input = c.op == OpId::conv_input_grad;
  const Geo g = ops::conv_grad_geometry(c.op, c.attrs, c.inputs);
  Problem p;
  p.dt = c.inputs[0].dtype(), p.dev = c.device.index(), p.tf32 = tf32_allowed();
  p.dir = input ? Dir::BwdData : Dir::BwdFilter;
  if (!describe(g, g.in, g.out, p)) return dnn_fallback(c, kCannot);
  auto nd = [&](const Tensor& t) { return g.nsp == 1 ? t.unsqueeze(2) : t; };
  const Tensor main = nd(c.inputs[0]);  // gy (input grad) or x (weight grad)
  p.nhwc = g.nsp > 1 && ops::channels_last(main);
  const Tensor a = packed(main, p.nhwc), b = packed(nd(c.inputs[1]), p.nhwc);
  Tensor out = placed_or(c, c.meta.m[0].shape, p.nhwc);
  const Tensor o = nd(out);
  std::unique_lock lock(g_mu, std::defer_lock);
  Plan* pl = locked_plan(p, op, lock);
  if (!pl) return dnn_fallback(c, "cuDNN has no algorithm for this convolution");
  if (input)
    run(p, *pl, nullptr, device_ptr(b), device_ptr(a), device_ptr(o), op);
  else
    run(p, *pl, device_ptr(a), nullptr, device_ptr(b), device_ptr(o), op);
  return {out};
}

}  // namespace

void register_cudnn_conv_kernels(BackendImpl& b) {
  constexpr DTypeMask kDnn =
      mask_of(DType::F32) | mask_of(DType::F16) | mask_of(DType::BF16) | mask_of(DType::F64);
  for (OpId op : {OpId::conv1d, OpId::conv2d, OpId::conv3d, OpId::conv_transpose1d,
                  OpId::conv_transpose2d, OpId::conv_input_grad, OpId::conv_weight_grad})
    b.set_kernel(op,
                 op == OpId::conv_input_grad || op == OpId::conv_weight_grad ? k_conv_grad : k_conv,
                 kDnn);
}

}  // namespace ember::cuda

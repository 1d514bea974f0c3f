// cuBLASLt kernels for mm, bmm, matmul and linear, and the entry points of cublas_ops.h.
//
// ember's matrices are row-major views; cuBLASLt's are column-major. A row-major [r, c] matrix
// with unit column stride is a column-major [c, r] one, so C = A @ B is run as C^T = B^T A^T:
// cuBLASLt's first operand is B, its second A, its output [N, M] with leading dim N (ember's
// contiguous output). A transposed view (unit row stride) is read in place with op T. Batch
// dims collapse into one batch stride (0 for a broadcast operand); when only A has them and
// its rows merge with them (x @ W), they fold into M: one large GEMM. Anything else is copied
// to a contiguous operand first (counted in cublas_stats().operand_copies).
//
// Plans (descriptors, layouts and the heuristic's algorithm) are cached per problem: its sizes,
// strides, dtypes, epilogue, pointer alignment and the TF32 setting. Each device has one cuBLASLt
// handle and a 32 MiB workspace.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "ember/backends/cuda/cublas_ops.h"
#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/fallback.h"
#include "ember/error.h"
#include "ember/fusion/library.h"

namespace ember::cuda {
namespace {

constexpr size_t kWorkspace = size_t(32) << 20;

std::atomic<int64_t> g_plans{0}, g_hits{0}, g_served{0}, g_copies{0};

void check_lt(cublasStatus_t s, const char* op, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    detail::throw_device(op, std::string(what) + ": " + cublasLtGetStatusName(s) + " (" +
                                 cublasLtGetStatusString(s) + ")");
}

struct PerDevice {
  std::once_flag once;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};
PerDevice g_dev[64];

PerDevice& device_state(int dev) {
  PerDevice& d = g_dev[dev];
  std::call_once(d.once, [&] {
    set_device(dev);
    check_lt(cublasLtCreate(&d.handle), "matmul", "cublasLtCreate");
    check(cudaMalloc(&d.workspace, kWorkspace), "matmul", "cuBLASLt workspace");
  });
  return d;
}

// One matrix operand in cuBLASLt's terms.
struct Mat {
  int64_t rows = 0, cols = 0, ld = 0, batch_stride = 0;  // column-major, as stored
  bool trans = false;
  const void* ptr = nullptr;
};

// A row-major [r, c] view with strides (sr, sc) as a column-major operand that, after its op,
// is [c, r]; false when neither stride is a unit one.
bool as_colmajor(int64_t r, int64_t c, int64_t sr, int64_t sc, Mat& m) {
  if (c == 1) sc = 1;
  if (r == 1) sr = sc == 1 ? c : 1;
  if (sc == 1 && sr >= std::max<int64_t>(c, 1)) {
    m.rows = c, m.cols = r, m.ld = sr, m.trans = false;
    return true;
  }
  if (sr == 1 && sc >= std::max<int64_t>(r, 1)) {
    m.rows = r, m.cols = c, m.ld = sc, m.trans = true;
    return true;
  }
  return false;
}

// The batch dims [0, nb) of `t` (already expanded to the output's batch shape) as one stride;
// false when they do not merge.
bool batch_stride(const Tensor& t, int64_t nb, int64_t& stride) {
  int64_t size = 1;
  bool any = false;
  stride = 0;
  for (int64_t i = nb - 1; i >= 0; --i) {
    const int64_t sz = t.size(i), st = t.stride(i);
    if (sz == 1) continue;
    if (!any) {
      stride = st, any = true;
    } else if (st != stride * size) {
      return false;
    }
    size *= sz;
  }
  return true;
}

struct Call {
  Tensor a, b;  // rank >= 2 each, batch dims expanded to the output's
  Tensor bias;
  Shape out;    // the op's output shape
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

bool dtype_ok(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

cudaDataType_t cuda_type(DType d) {
  return d == DType::F32 ? CUDA_R_32F : d == DType::F16 ? CUDA_R_16F : CUDA_R_16BF;
}

bool broadcasts_to(const Shape& s, const Shape& to) {
  if (s.size() > to.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t a = s[s.size() - 1 - i], b = to[to.size() - 1 - i];
    if (a != 1 && a != b) return false;
  }
  return true;
}

// A bias cuBLASLt adds: a vector along the output's last dim, contiguous, of the output dtype.
bool bias_ok(const Tensor& bias, const Shape& out, DType dt) {
  if (!bias.defined()) return true;
  if (bias.dtype() != dt || !broadcasts_to(bias.shape(), out) || out.empty()) return false;
  for (int64_t i = 0; i + 1 < bias.dim(); ++i)
    if (bias.size(i) != 1) return false;
  return bias.dim() >= 1 && bias.size(-1) == out.back() && (bias.size(-1) == 1 || bias.stride(-1) == 1);
}

bool epilogue_ok(const Epilogue& ep, DType dt, const Shape& out) {
  if (ep.act != Activation::None && ep.act != Activation::Relu && ep.act != Activation::GeluTanh)
    return false;
  if (ep.residual.defined()) {
    if (!broadcasts_to(ep.residual.shape(), out)) return false;
    if (ep.act != Activation::None && !ep.residual_first) return false;
    if (ep.residual.device().backend() != Backend::Cuda) return false;
  }
  return true;
}

// Static checks; fills the call's sizes.
bool servable(Call& c, const Epilogue& ep) {
  const DType dt = c.a.dtype();
  if (!dtype_ok(dt) || c.b.dtype() != dt) return false;
  if (!bias_ok(c.bias, c.out, dt) || !epilogue_ok(ep, dt, c.out)) return false;
  for (int64_t s : c.out)
    if (s == 0) return false;  // nothing to compute: the host fallback writes the empty result
  c.m = c.a.size(-2), c.k = c.a.size(-1), c.n = c.b.size(-1);
  if (c.k == 0) return false;
  for (int64_t v : {c.m, c.n, c.k})
    if (v > INT32_MAX) return false;
  return true;
}

struct Problem {
  Mat a, b;  // cuBLASLt's first operand is ember's b
  int64_t m = 0, n = 0, k = 0, batch = 1;
  DType dt = DType::F32;
  bool bias = false, residual = false;
  Activation act = Activation::None;
  int align = 16;
};

int alignment(const void* p) {
  const auto v = uintptr_t(p);
  int a = 256;
  while (a > 1 && v % uintptr_t(a)) a >>= 1;
  return std::min(a, 16);
}

// The problem's geometry; an operand cuBLASLt cannot read in place is copied into `keep`.
bool problem(Call& c, Problem& p, Tensor keep[2], bool copy) {
  const int64_t nb = int64_t(c.out.size()) - 2 + (c.out.size() < 2 ? 2 - int64_t(c.out.size()) : 0);
  (void)nb;
  const int64_t rank = std::max(c.a.dim(), c.b.dim());
  Shape batch_shape;
  for (int64_t i = 0; i < rank - 2; ++i) {
    const int64_t ia = i - (rank - c.a.dim()), ib = i - (rank - c.b.dim());
    const int64_t sa = ia >= 0 ? c.a.size(ia) : 1, sb = ib >= 0 ? c.b.size(ib) : 1;
    batch_shape.push_back(std::max(sa, sb));
  }
  p.batch = numel_of(batch_shape);
  p.m = c.m, p.n = c.n, p.k = c.k, p.dt = c.a.dtype();
  auto full = [&](const Tensor& t) {
    Shape s = batch_shape;
    s.push_back(t.size(-2));
    s.push_back(t.size(-1));
    return t.expand(s);
  };
  Tensor a = full(c.a), b = full(c.b);
  const int64_t nbd = int64_t(batch_shape.size());
  auto operand = [&](Tensor& t, Tensor& hold, Mat& m) {
    int64_t bs = 0;
    const int64_t r = t.size(-2), cc = t.size(-1);
    if (batch_stride(t, nbd, bs) && as_colmajor(r, cc, t.stride(-2), t.stride(-1), m)) {
      m.batch_stride = bs;
      m.ptr = copy ? device_ptr(t) : nullptr;
      return true;
    }
    if (!copy) {  // described as its contiguous copy would be
      as_colmajor(r, cc, cc, 1, m);
      m.batch_stride = r * cc;
      return true;
    }
    hold = detail::empty_tensor(t.shape(), t.dtype(), t.device().without_layers());
    copy_into(hold, t, "matmul");
    g_copies.fetch_add(1, std::memory_order_relaxed);
    as_colmajor(r, cc, cc, 1, m);
    m.batch_stride = r * cc;
    m.ptr = device_ptr(hold);
    return true;
  };
  // x @ W: A's batch dims fold into its rows when B has none and A is row-major throughout.
  int64_t abs = 0, bbs = 0;
  if (p.batch > 1 && batch_stride(b, nbd, bbs) && bbs == 0 && batch_stride(a, nbd, abs) &&
      a.stride(-1) == 1 && (abs == a.stride(-2) * p.m || p.m == 1)) {
    const int64_t rows = p.batch * p.m;
    const int64_t sr = p.m == 1 ? abs : a.stride(-2);
    if (as_colmajor(rows, p.k, sr, 1, p.b)) {
      p.b.ptr = copy ? device_ptr(a) : nullptr;
      p.m = rows;
      p.batch = 1;
      Tensor b2 = b;
      operand(b2, keep[1], p.a);
      p.a.batch_stride = 0;
      return true;
    }
  }
  operand(a, keep[0], p.b);
  operand(b, keep[1], p.a);
  return true;
}

struct Plan {
  std::mutex mu;  // the bias pointer is set on the shared descriptor per call
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
};

using Key = std::vector<int64_t>;
Key key_of(const Problem& p, int dev) {
  Key k{dev, int64_t(p.dt), p.m, p.n, p.k, p.batch, p.bias, p.residual, int64_t(p.act), p.align,
        tf32_allowed()};
  for (const Mat* m : {&p.a, &p.b}) k.insert(k.end(), {m->rows, m->cols, m->ld, m->batch_stride, m->trans});
  return k;
}

cublasLtMatrixLayout_t layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld,
                              int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l;
  check_lt(cublasLtMatrixLayoutCreate(&l, t, uint64_t(rows), uint64_t(cols), ld), "matmul",
           "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const int32_t count = int32_t(batch);
    check_lt(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                              sizeof count),
             "matmul", "batch count");
    check_lt(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &stride, sizeof stride),
             "matmul", "batch stride");
  }
  return l;
}

void build(Plan& pl, const Problem& p, int dev) {
  const cudaDataType_t t = cuda_type(p.dt);
  const cublasComputeType_t ct = p.dt == DType::F32 && tf32_allowed()
                                     ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check_lt(cublasLtMatmulDescCreate(&pl.desc, ct, CUDA_R_32F), "matmul", "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = p.a.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = p.b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
           "matmul", "transa");
  check_lt(cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
           "matmul", "transb");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (p.act == Activation::Relu) epi = p.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (p.act == Activation::GeluTanh) epi = p.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (p.bias) epi = CUBLASLT_EPILOGUE_BIAS;
  check_lt(cublasLtMatmulDescSetAttribute(pl.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
           "matmul", "epilogue");
  pl.la = layout(t, p.a.rows, p.a.cols, p.a.ld, p.batch, p.a.batch_stride);
  pl.lb = layout(t, p.b.rows, p.b.cols, p.b.ld, p.batch, p.b.batch_stride);
  pl.ld = layout(t, p.n, p.m, p.n, p.batch, p.n * p.m);
  cublasLtMatmulPreference_t pref;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "matmul", "preference");
  const uint64_t ws = kWorkspace;
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws, sizeof ws),
           "matmul", "workspace");
  const uint32_t al = uint32_t(p.align);
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref, attr, &al, sizeof al), "matmul", "alignment");
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(device_state(dev).handle, pl.desc, pl.la,
                                                          pl.lb, pl.ld, pl.ld, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  pl.ok = s == CUBLAS_STATUS_SUCCESS && found > 0;
  if (pl.ok) pl.algo = res.algo;
  g_plans.fetch_add(1, std::memory_order_relaxed);
}

// Plans are kept for the process (never destroyed: the driver may be gone at exit).
Plan* plan_for(const Problem& p, int dev) {
  static std::mutex mu;
  static auto* cache = new std::map<Key, Plan*>;
  const Key k = key_of(p, dev);
  std::lock_guard lock(mu);
  auto it = cache->find(k);
  if (it != cache->end()) {
    g_hits.fetch_add(1, std::memory_order_relaxed);
    return it->second;
  }
  auto* pl = new Plan;
  set_device(dev);
  build(*pl, p, dev);
  cache->emplace(k, pl);
  return pl;
}

Problem describe(Call& c, const Epilogue& ep, Tensor keep[2], bool copy) {
  Problem p;
  problem(c, p, keep, copy);
  p.bias = c.bias.defined();
  p.residual = ep.residual.defined();
  p.act = ep.act;
  return p;
}

// Runs the call into `placed` (or a fresh output); undefined when cuBLASLt cannot serve it.
Tensor try_run(Call c, const Epilogue& ep, Device device, const Tensor& placed, const char* op) {
  if (!servable(c, ep)) return {};
  const int dev = device.index();
  Tensor keep[2];
  Problem p = describe(c, ep, keep, /*copy=*/true);
  Tensor out = placed.defined() ? placed : detail::empty_tensor(c.out, p.dt, device);
  void* d = device_ptr(out);
  const void* bias = c.bias.defined() ? device_ptr(c.bias) : nullptr;
  p.align = std::min({alignment(p.a.ptr), alignment(p.b.ptr), alignment(d),
                      bias ? alignment(bias) : 16});
  Plan* pl = plan_for(p, dev);
  if (!pl->ok) return {};
  if (ep.residual.defined()) copy_into(out, ep.residual, op);  // C = D = out, beta = 1
  const float alpha = ep.scale, beta = ep.residual.defined() ? 1.f : 0.f;
  PerDevice& st = device_state(dev);
  set_device(dev);
  std::lock_guard lock(pl->mu);
  if (bias)
    check_lt(cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof bias),
             op, "bias pointer");
  check_lt(cublasLtMatmul(st.handle, pl->desc, &alpha, p.a.ptr, pl->la, p.b.ptr, pl->lb, &beta, d,
                          pl->ld, d, pl->ld, &pl->algo, st.workspace, kWorkspace,
                          cudaStream_t(stream_handle(nullptr, dev))),
           op, "cublasLtMatmul");
  after_launch(op, dev);
  g_served.fetch_add(1, std::memory_order_relaxed);
  return out;
}

bool can_run(Call c, const Epilogue& ep) {
  if (!servable(c, ep)) return false;
  Tensor keep[2];
  Problem p = describe(c, ep, keep, /*copy=*/false);
  return plan_for(p, c.a.device().index())->ok;
}

Call matmul_call(const Tensor& a, const Tensor& b, Shape out) {
  Call c;
  c.a = a.dim() == 1 ? a.unsqueeze(0) : a;
  c.b = b.dim() == 1 ? b.unsqueeze(1) : b;
  c.out = std::move(out);
  return c;
}

Call linear_call(const Tensor& x, const Tensor& w, const Tensor& bias, Shape out) {
  Call c;
  c.a = x.dim() == 1 ? x.unsqueeze(0) : x;
  c.b = (w.dim() == 1 ? w.unsqueeze(0) : w).transpose(-1, -2);
  c.bias = bias;
  c.out = std::move(out);
  return c;
}

Shape out_shape(OpId op, std::span<const Tensor> in) {
  MetaList meta;
  op_def(op).infer(op, Attrs{}, in, meta);
  return meta.m[0].shape;
}

Tensor placed_of(const OpCall& c) { return c.out.empty() ? Tensor() : c.out[0]; }

TensorList or_fallback(const OpCall& c, Tensor r) {
  if (r.defined()) return {r};
  if (!detail::host_fallback_applies(c))
    detail::throw_not_implemented(op_name(c.op), "cuBLASLt cannot serve this call");
  return detail::run_host_fallback(c);
}

TensorList k_matmul(const OpCall& c) {
  return or_fallback(c, try_run(matmul_call(c.inputs[0], c.inputs[1], c.meta.m[0].shape), {},
                                c.device, placed_of(c), op_name(c.op)));
}

TensorList k_linear(const OpCall& c) {
  return or_fallback(c, try_run(linear_call(c.inputs[0], c.inputs[1], c.inputs[2],
                                            c.meta.m[0].shape),
                                {}, c.device, placed_of(c), "linear"));
}

}  // namespace

bool can_matmul(const Tensor& a, const Tensor& b, const Epilogue& ep) {
  const Tensor in[2] = {a, b};
  return can_run(matmul_call(a, b, out_shape(OpId::matmul, in)), ep);
}

Tensor matmul(const Tensor& a, const Tensor& b, const Epilogue& ep, const Tensor& out) {
  const Tensor in[2] = {a, b};
  Tensor r = try_run(matmul_call(a, b, out_shape(OpId::matmul, in)), ep, a.device(), out, "matmul");
  if (!r.defined()) throw Error("[matmul] cuBLASLt cannot serve this call (ask can_matmul first)");
  return r;
}

bool can_linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Epilogue& ep) {
  const Tensor in[3] = {x, w, bias};
  return can_run(linear_call(x, w, bias, out_shape(OpId::linear, in)), ep);
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, const Epilogue& ep,
              const Tensor& out) {
  const Tensor in[3] = {x, w, bias};
  Tensor r = try_run(linear_call(x, w, bias, out_shape(OpId::linear, in)), ep, x.device(), out,
                     "linear");
  if (!r.defined()) throw Error("[linear] cuBLASLt cannot serve this call (ask can_linear first)");
  return r;
}

CublasStats cublas_stats() {
  return {g_plans.load(), g_hits.load(), g_served.load(), g_copies.load()};
}

namespace {

// The fusion layer's product + activation pairs on cuda (ember/fusion/library.h): ReLU and
// tanh-GELU run as cuBLASLt's epilogue, so the product's value never reaches memory.
bool serves_epilogue(const Epilogue& ep, DType dt) {
  return (dt == DType::F32 || dt == DType::F16 || dt == DType::BF16) && ep.scale == 1.f &&
         !ep.residual.defined() &&
         (ep.act == Activation::None || ep.act == Activation::Relu ||
          ep.act == Activation::GeluTanh);
}
bool run_epilogue(OpId op, const Tensor& a, const Tensor& b, const Tensor& bias,
                  const Epilogue& ep, const Tensor& out) {
  if (op == OpId::linear) {
    if (!cuda::can_linear(a, b, bias, ep)) return false;
    cuda::linear(a, b, bias, ep, out);
    return true;
  }
  if (bias.defined() || !cuda::can_matmul(a, b, ep)) return false;
  cuda::matmul(a, b, ep, out);
  return true;
}

}  // namespace

void register_cublas_kernels(BackendImpl& b) {
  for (OpId op : {OpId::mm, OpId::bmm, OpId::matmul})
    b.set_kernel(op, k_matmul, kFloatDTypes | kIntDTypes);
  b.set_kernel(OpId::linear, k_linear, kFloatDTypes | kIntDTypes);
  fusion::set_device_products(Backend::Cuda, {serves_epilogue, run_epilogue});
}

}  // namespace ember::cuda

// Loading cuDNN, its handles, descriptors and workspaces (cudnn_runtime.h).
#include "ember/backends/cuda/cudnn_runtime.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "ember/backends/cuda/runtime.h"
#include "ember/backends/fallback.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {

struct Loaded {
  CudnnApi api;
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded l;
  if (const char* e = std::getenv("EMBER_CUDNN"); e && std::string(e) == "0") {
    l.why = "cuDNN not found: turned off by EMBER_CUDNN=0";
    return l;
  }
  void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);  // kept for the process
  if (!lib) {
    const char* err = dlerror();
    l.why = std::string("cuDNN not found: ") + (err ? err : "dlopen(libcudnn.so.9) failed");
    return l;
  }
  const char* missing = nullptr;
#define EMBER_X(f)                                                         \
  l.api.f = reinterpret_cast<decltype(l.api.f)>(dlsym(lib, #f));           \
  if (!l.api.f && !missing) missing = #f;
  EMBER_CUDNN_FNS(EMBER_X)
#undef EMBER_X
  if (missing) {
    l.why = std::string("cuDNN not found: libcudnn.so.9 has no ") + missing;
    return l;
  }
  l.api.version = l.api.cudnnGetVersion();
  if (l.api.version / 10000 != 9) {
    l.why = "cuDNN not found: libcudnn.so.9 reports version " + std::to_string(l.api.version) +
            ", expected 9.x";
    return l;
  }
  l.ok = true;
  return l;
}

const Loaded& loaded() {
  static const Loaded* l = new Loaded(load());  // never unloaded: handles live to exit
  return *l;
}

struct PerDevice {
  std::once_flag once;
  cudnnHandle_t handle = nullptr;
};
PerDevice g_dev[64];

std::atomic<int64_t> g_plans{0}, g_hits{0}, g_served{0};

}  // namespace

const CudnnApi* cudnn() {
  const Loaded& l = loaded();
  return l.ok ? &l.api : nullptr;
}

const std::string& cudnn_unavailable_reason() { return loaded().why; }
bool cudnn_loaded() { return cudnn_available(); }
std::string cudnn_missing_reason() { return cudnn_unavailable_reason(); }

void check_dnn(cudnnStatus_t s, const char* op, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) [[likely]]
    return;
  const CudnnApi* a = cudnn();
  detail::throw_device(op, std::string(what) + ": " +
                               (a ? a->cudnnGetErrorString(s) : "CUDNN_STATUS_?") + " (status " +
                               std::to_string(int(s)) + ")");
}

cudnnHandle_t dnn_handle(int dev) {
  PerDevice& d = g_dev[dev];
  std::call_once(d.once, [&] {
    set_device(dev);
    check_dnn(cudnn()->cudnnCreate(&d.handle), "cudnn", "cudnnCreate");
    check_dnn(cudnn()->cudnnSetStream(d.handle, cudaStream_t(stream_handle(nullptr, dev))),
              "cudnn", "cudnnSetStream");
  });
  return d.handle;
}

cudnnDataType_t dnn_type(DType d) {
  return d == DType::F32   ? CUDNN_DATA_FLOAT
         : d == DType::F16 ? CUDNN_DATA_HALF
         : d == DType::F64 ? CUDNN_DATA_DOUBLE
                           : CUDNN_DATA_BFLOAT16;
}

TensorDesc::TensorDesc() { check_dnn(cudnn()->cudnnCreateTensorDescriptor(&d), "cudnn", "tensor descriptor"); }
TensorDesc::~TensorDesc() { cudnn()->cudnnDestroyTensorDescriptor(d); }
void TensorDesc::set(cudnnDataType_t t, int nd, const int* sizes, const int* strides,
                     const char* op) {
  check_dnn(cudnn()->cudnnSetTensorNdDescriptor(d, t, nd, sizes, strides), op,
            "cudnnSetTensorNdDescriptor");
}
FilterDesc::FilterDesc() { check_dnn(cudnn()->cudnnCreateFilterDescriptor(&d), "cudnn", "filter descriptor"); }
FilterDesc::~FilterDesc() { cudnn()->cudnnDestroyFilterDescriptor(d); }
ConvDesc::ConvDesc() {
  check_dnn(cudnn()->cudnnCreateConvolutionDescriptor(&d), "cudnn", "convolution descriptor");
}
ConvDesc::~ConvDesc() { cudnn()->cudnnDestroyConvolutionDescriptor(d); }
PoolDesc::PoolDesc() { check_dnn(cudnn()->cudnnCreatePoolingDescriptor(&d), "cudnn", "pooling descriptor"); }
PoolDesc::~PoolDesc() { cudnn()->cudnnDestroyPoolingDescriptor(d); }

Workspace::Workspace(size_t bytes, int dev) {
  if (bytes) storage = allocate(bytes, dev);
}

TensorList dnn_fallback(const OpCall& call, const char* why) {
  if (detail::host_fallback_applies(call, why)) return detail::run_host_fallback(call);
  const OpDef& d = op_def(call.op);
  if (d.decompose) return d.decompose(call.attrs, call.inputs);
  detail::throw_not_implemented(op_name(call.op), why);
  return {};
}

CudnnStats cudnn_stats() { return {g_plans.load(), g_hits.load(), g_served.load()}; }
void note_dnn_plan(bool hit) { (hit ? g_hits : g_plans).fetch_add(1, std::memory_order_relaxed); }
void note_dnn_served() { g_served.fetch_add(1, std::memory_order_relaxed); }

}  // namespace ember::cuda

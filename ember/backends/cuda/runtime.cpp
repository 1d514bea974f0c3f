// Devices, streams, events and error checks of the CUDA runtime (ember/backends/cuda/runtime.h).
#include "ember/backends/cuda/runtime.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <vector>

#include "ember/backends/cuda/status.h"
#include "ember/detail/capture.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {

struct Census {
  int count = 0;
  cudaError_t error = cudaSuccess;
};

// Asked once: cudaGetDeviceCount loads the driver; without one it reports an error, not a crash.
const Census& census() {
  static const Census c = [] {
    Census r;
    r.error = cudaGetDeviceCount(&r.count);
    if (r.error != cudaSuccess) r.count = 0;
    cudaGetLastError();  // a failed census leaves nothing sticky for later calls
    return r;
  }();
  return c;
}

class CudaStream final : public Stream {
 public:
  CudaStream(int dev, bool owned) : dev_(dev), owned_(owned) {
    set_device(dev);
    check(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking), "stream", "create");
  }
  ~CudaStream() override {
    if (owned_) cudaStreamDestroy(handle_);  // default streams live as long as the process
  }
  Device device() const override { return Device::cuda(dev_); }
  cudaStream_t handle() const { return handle_; }
  int dev() const { return dev_; }

 private:
  int dev_;
  bool owned_;
  cudaStream_t handle_ = nullptr;
};

constexpr int kMaxDevices = 64;

struct Defaults {
  std::once_flag once[kMaxDevices];
  CudaStream* stream[kMaxDevices] = {};
  std::once_flag info_once[kMaxDevices];
  DeviceInfo info[kMaxDevices];
};
Defaults& defaults() {
  static Defaults* d = new Defaults;  // never destroyed: storages free on these streams at exit
  return *d;
}

std::atomic<bool> g_tf32{false};

}  // namespace

int device_count() noexcept { return std::min(census().count, kMaxDevices); }

std::string unavailable_reason() {
  const Census& c = census();
  if (c.count > 0) return {};
  switch (c.error) {
    case cudaErrorNoDevice: return "no GPU: the CUDA driver reports no device";
    case cudaErrorInsufficientDriver:
      return "no CUDA driver (or one older than the CUDA runtime ember was built with)";
    case cudaSuccess: return "no GPU";
    default:
      return std::string("no CUDA driver: ") + cudaGetErrorName(c.error) + " (" +
             cudaGetErrorString(c.error) + ")";
  }
}

void check_index(int dev, const char* op) {
  const int n = device_count();
  if (n == 0) detail::throw_device(op, "cuda:" + std::to_string(dev) + " requested, but " +
                                          unavailable_reason());
  if (dev < 0 || dev >= n)
    detail::throw_device(op, "cuda:" + std::to_string(dev) + " requested: index " +
                                 std::to_string(dev) + " of " + std::to_string(n) +
                                 (n == 1 ? " device" : " devices"));
}

const DeviceInfo& device_info(int dev) {
  check_index(dev, "cuda::device_info");
  Defaults& d = defaults();
  std::call_once(d.info_once[dev], [&] {
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, dev), "cuda::device_info", "cudaGetDeviceProperties");
    DeviceInfo& i = d.info[dev];
    i.name = p.name;
    i.major = p.major, i.minor = p.minor, i.sms = p.multiProcessorCount;
    i.l2_bytes = p.l2CacheSize;
    i.smem_per_block_optin = int64_t(p.sharedMemPerBlockOptin);
    i.total_bytes = int64_t(p.totalGlobalMem);
  });
  return d.info[dev];
}

void set_device(int dev) {
  thread_local int current = -1;
  if (current == dev) return;
  check(cudaSetDevice(dev), "cuda", "cudaSetDevice");
  current = dev;
}

Stream* default_stream(int dev) {
  check_index(dev, "cuda::stream");
  Defaults& d = defaults();
  std::call_once(d.once[dev], [&] { d.stream[dev] = new CudaStream(dev, /*owned=*/false); });
  return d.stream[dev];
}

void* stream_handle(Stream* s, int dev) {
  if (!s) s = default_stream(dev);
  return static_cast<CudaStream*>(s)->handle();
}

std::unique_ptr<Stream> new_stream(int dev) {
  check_index(dev, "cuda::new_stream");
  return std::make_unique<CudaStream>(dev, /*owned=*/true);
}

int stream_device(const Stream& s) { return static_cast<const CudaStream&>(s).dev(); }

void fail(int cuda_error, const char* op, const char* what) {
  const auto e = cudaError_t(cuda_error);
  const std::string msg = std::string("[") + op + "] " + what + ": " + cudaGetErrorName(e) +
                          " (" + cudaGetErrorString(e) + ")";
  if (e == cudaErrorMemoryAllocation) throw OutOfMemory(msg);
  throw DeviceError(msg);
}

void check(int cuda_error, const char* op, const char* what) {
  if (cuda_error != cudaSuccess) [[unlikely]] fail(cuda_error, op, what);
}

bool sync_launches() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_CUDA_SYNC");
    return e && std::string(e) == "1";
  }();
  return on;
}

void after_launch(const char* op, int dev) {
  check(cudaGetLastError(), op, "kernel launch");
  if (!sync_launches() || detail::active_capture()) return;  // no sync inside a capture
  check(cudaStreamSynchronize(cudaStream_t(stream_handle(nullptr, dev))), op,
        "kernel (EMBER_CUDA_SYNC=1)");
  raise_kernel_status(dev);
}

CudaEvent::~CudaEvent() {
  if (handle) cudaEventDestroy(cudaEvent_t(handle));
}

std::shared_ptr<CudaEvent> record_event(Stream* s, int dev) {
  if (s) dev = stream_device(*s);
  set_device(dev);
  auto e = std::make_shared<CudaEvent>();
  e->device = dev;
  cudaEvent_t h;
  check(cudaEventCreate(&h), "cuda::record_event", "cudaEventCreate");
  e->handle = h;
  check(cudaEventRecord(h, cudaStream_t(stream_handle(s, dev))), "cuda::record_event",
        "cudaEventRecord");
  return e;
}

float elapsed_ms(const Event& start, const Event& end) {
  auto* a = dynamic_cast<const CudaEvent*>(&start);
  auto* b = dynamic_cast<const CudaEvent*>(&end);
  if (!a || !b) detail::throw_value("cuda::elapsed_ms", "expected two events of the cuda backend");
  check(cudaEventSynchronize(cudaEvent_t(b->handle)), "cuda::elapsed_ms", "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, cudaEvent_t(a->handle), cudaEvent_t(b->handle)),
        "cuda::elapsed_ms", "cudaEventElapsedTime");
  return ms;
}

bool tf32_allowed() { return g_tf32.load(std::memory_order_relaxed); }
void set_tf32_allowed(bool on) { g_tf32.store(on); }

}  // namespace ember::cuda

// The cuda backend: device memory from the stream-ordered pool (allocator.cpp), copies between
// the host and devices through a small pool of pinned staging buffers, cudaMemcpyPeer between
// GPUs, events, and synchronisation that rethrows what kernels reported. Its kernel table holds
// the view ops (geometry only), the copy family (copy_ops.cpp), ranges and random draws
// (creation_ops.cpp), cuBLASLt's products
// (cublas_matmul.cpp), cuDNN's convolutions, pooling and batch norm (cudnn_*.cpp), CUB's sorts
// and scans (sort_scan_ops.cpp), the gather/scatter family (index_ops.cpp) and the copy-only
// layout ops (layout_ops.cpp); ops with a decomposition run it (the ops they are built from);
// every other op runs through the dispatcher's host fallback.
#include <cuda_runtime.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/cudnn_runtime.h"
#include "ember/backends/cuda/graph.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/cuda/status.h"
#include "ember/backends/fallback.h"
#include "ember/backends/flex/flex.h"
#include "ember/detail/capture.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {

// Pinned host buffers, reused: a host<->device copy moves through two of them in turn, so the
// host's memcpy of one chunk overlaps the DMA of the other.
constexpr size_t kStageBytes = size_t(4) << 20;
constexpr size_t kMaxPooled = 4;

struct Stage {
  void* buf = nullptr;
  cudaEvent_t done = nullptr;  // the DMA that last used `buf`
};

class StagingPool {
 public:
  Stage take() {
    {
      std::lock_guard lock(mu_);
      if (!free_.empty()) {
        Stage s = free_.back();
        free_.pop_back();
        return s;
      }
    }
    Stage s;
    check(cudaMallocHost(&s.buf, kStageBytes), "copy", "cudaMallocHost (pinned staging)");
    check(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "copy", "cudaEventCreate");
    return s;
  }
  void give(Stage s) {
    std::lock_guard lock(mu_);
    if (free_.size() < kMaxPooled) {
      free_.push_back(s);
      return;
    }
    cudaEventDestroy(s.done);
    cudaFreeHost(s.buf);
  }

 private:
  std::mutex mu_;
  std::vector<Stage> free_;
};
StagingPool& staging() {
  static StagingPool* p = new StagingPool;  // never destroyed: the runtime may be gone at exit
  return *p;
}

// Two staging buffers for one copy, returned to the pool at scope exit.
struct StagePair {
  Stage s[2];
  StagePair() : s{staging().take(), staging().take()} {}
  ~StagePair() {
    for (Stage& x : s) {
      cudaEventSynchronize(x.done);
      staging().give(x);
    }
  }
};

int dev_of(const Storage& s) { return s.place.index(); }

// Reading a graph constant (a Scalar held in the storage's inline bytes, in host memory).
bool is_inline(const Storage& s) { return s.data == s.inline_bytes; }

class CudaBackend final : public BackendImpl {
 public:
  Backend kind() const override { return Backend::Cuda; }
  bool is_host() const override { return false; }
  int device_count() const override { return cuda::device_count(); }
  void check_device(int index, const char* op) const override { check_index(index, op); }

  std::shared_ptr<Storage> allocate(size_t nbytes, Device place) override {
    return cuda::allocate(nbytes, place.index());
  }

  void copy_from_host(Storage& dst, size_t off, const void* src, size_t n) override {
    if (!n) return;
    if (is_inline(dst)) {
      std::memcpy(static_cast<char*>(dst.data) + off, src, n);
      return;
    }
    const int dev = dev_of(dst);
    detail::forbid_in_capture(dst.place, nullptr, "a copy of host data to the device");
    set_device(dev);
    auto stream = cudaStream_t(stream_handle(nullptr, dev));
    char* d = static_cast<char*>(dst.data) + off;
    const char* h = static_cast<const char*>(src);
    StagePair st;
    for (size_t done = 0, i = 0; done < n; done += kStageBytes, ++i) {
      Stage& s = st.s[i & 1];
      const size_t len = std::min(kStageBytes, n - done);
      check(cudaEventSynchronize(s.done), "copy", "host to device (staging)");
      std::memcpy(s.buf, h + done, len);
      check(cudaMemcpyAsync(d + done, s.buf, len, cudaMemcpyHostToDevice, stream), "copy",
            "host to device");
      check(cudaEventRecord(s.done, stream), "copy", "host to device (event)");
    }
    check(cudaStreamSynchronize(stream), "copy", "host to device");
  }

  void copy_to_host(void* dst, const Storage& src, size_t off, size_t n) override {
    if (!n) return;
    if (is_inline(src)) {
      std::memcpy(dst, static_cast<const char*>(src.data) + off, n);
      return;
    }
    const int dev = dev_of(src);
    detail::forbid_in_capture(src.place, detail::current_op() ? nullptr : "read on the host",
                              "a read of device data on the host (item(), to_vector(), printing, "
                              "a data-dependent shape)");
    set_device(dev);
    auto stream = cudaStream_t(stream_handle(src.last_use, dev));
    const char* d = static_cast<const char*>(src.data) + off;
    char* h = static_cast<char*>(dst);
    StagePair st;
    size_t prev = 0, prev_len = 0;
    for (size_t done = 0, i = 0; done < n; done += kStageBytes, ++i) {
      Stage& s = st.s[i & 1];
      const size_t len = std::min(kStageBytes, n - done);
      check(cudaEventSynchronize(s.done), "copy", "device to host (staging)");
      check(cudaMemcpyAsync(s.buf, d + done, len, cudaMemcpyDeviceToHost, stream), "copy",
            "device to host");
      check(cudaEventRecord(s.done, stream), "copy", "device to host (event)");
      if (i > 0) {  // the previous chunk is on its way to the host: unpack it meanwhile
        Stage& p = st.s[(i - 1) & 1];
        check(cudaEventSynchronize(p.done), "copy", "device to host");
        std::memcpy(h + prev, p.buf, prev_len);
      }
      prev = done, prev_len = len;
    }
    const size_t chunks = (n + kStageBytes - 1) / kStageBytes;
    Stage& last = st.s[(chunks - 1) & 1];
    check(cudaEventSynchronize(last.done), "copy", "device to host");
    std::memcpy(h + prev, last.buf, prev_len);
    raise_kernel_status(dev);  // a host read is a sync: what kernels reported surfaces here
  }

  void copy_from_host_async(Storage& dst, size_t off, const void* src, size_t n,
                            Stream* stream) override {
    if (!n) return;
    const int dev = dev_of(dst);
    detail::forbid_in_capture(dst.place, nullptr, "a copy of host data to the device");
    set_device(dev);
    check(cudaMemcpyAsync(static_cast<char*>(dst.data) + off, src, n, cudaMemcpyHostToDevice,
                          cudaStream_t(stream_handle(stream, dev))),
          "copy", "host to device (async)");
  }
  void copy_to_host_async(void* dst, const Storage& src, size_t off, size_t n,
                          Stream* stream) override {
    if (!n) return;
    const int dev = dev_of(src);
    detail::forbid_in_capture(src.place, nullptr, "a copy of device data to the host");
    set_device(dev);
    check(cudaMemcpyAsync(dst, static_cast<const char*>(src.data) + off, n,
                          cudaMemcpyDeviceToHost, cudaStream_t(stream_handle(stream, dev))),
          "copy", "device to host (async)");
  }

  void copy_device(Storage& dst, size_t dst_off, const Storage& src, size_t src_off, size_t n,
                   Stream* stream) override {
    if (!n) return;
    char* d = static_cast<char*>(dst.data) + dst_off;
    const char* s = static_cast<const char*>(src.data) + src_off;
    const int dd = dev_of(dst), sd = dev_of(src);
    if (is_inline(src)) {
      // A graph constant filling device memory inside a capture: copied from device bytes that
      // live as long as the graph, so every replay writes it again.
      if (detail::Capture* c = capture_of(dd)) [[unlikely]] {
        const void* k = capture_constant(*c, s, n);
        set_device(dd);
        check(cudaMemcpyAsync(d, k, n, cudaMemcpyDeviceToDevice,
                              cudaStream_t(stream_handle(stream, dd))),
              "copy", "device to device (constant)");
        return;
      }
      return copy_from_host(dst, dst_off, s, n);
    }
    set_device(dd);
    auto h = cudaStream_t(stream_handle(stream, dd));
    if (dd == sd) {
      check(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, h), "copy", "device to device");
      return;
    }
    // Between GPUs: the source's pending work must be done before the peer copy reads it.
    detail::forbid_in_capture(src.place, nullptr, "a copy between GPUs");
    detail::forbid_in_capture(dst.place, nullptr, "a copy between GPUs");
    check(cudaStreamSynchronize(cudaStream_t(stream_handle(src.last_use, sd))), "copy",
          "peer copy (source)");
    check(cudaMemcpyPeerAsync(d, dd, s, sd, n, h), "copy", "cudaMemcpyPeer");
    check(cudaStreamSynchronize(h), "copy", "peer copy");
  }

  Stream* default_stream(Device d) override { return cuda::default_stream(d.index()); }
  std::shared_ptr<Event> record_event(Stream* stream) override {
    return cuda::record_event(stream, stream ? stream_device(*stream) : 0);
  }
  void wait_event(Stream* stream, const Event& e) override {
    auto& ce = dynamic_cast<const CudaEvent&>(e);
    const int dev = stream ? stream_device(*stream) : ce.device;
    set_device(dev);
    check(cudaStreamWaitEvent(cudaStream_t(stream_handle(stream, dev)), cudaEvent_t(ce.handle), 0),
          "cuda::wait_event", "cudaStreamWaitEvent");
  }
  void synchronize_event(const Event& e) override {
    auto& ce = dynamic_cast<const CudaEvent&>(e);
    detail::forbid_in_capture(Device::cuda(ce.device), nullptr, "waiting for an event on the host");
    check(cudaEventSynchronize(cudaEvent_t(ce.handle)), "cuda::synchronize_event",
          "cudaEventSynchronize");
  }
  void synchronize(Device d) override {
    detail::forbid_in_capture(d, "synchronize", "a device synchronisation");
    set_device(d.index());
    check(cudaStreamSynchronize(cudaStream_t(stream_handle(nullptr, d.index()))), "synchronize",
          ("work queued on " + d.without_layers().str()).c_str());
    raise_kernel_status(d.index());
  }
};

}  // namespace

std::unique_ptr<BackendImpl> make_cuda_backend() {
  auto b = std::make_unique<CudaBackend>();
  flex::register_flex_views(*b);  // geometry only: valid for device storage
  register_copy_kernels(*b);
  register_creation_kernels(*b);
  register_cublas_kernels(*b);
  register_cudnn_conv_kernels(*b);
  register_cudnn_pool_norm_kernels(*b);
  register_sort_scan_kernels(*b);
  register_index_kernels(*b);
  register_layout_kernels(*b);
  register_attention_kernels(*b);
  register_kl_kernels(*b);  // only ops nothing above serves
  // Last: the ops built from those above run their decompositions rather than the fallback.
  detail::serve_decompositions(*b);
  return b;
}

}  // namespace ember::cuda

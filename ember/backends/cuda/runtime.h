#pragma once
// The CUDA runtime of ember (private): devices, streams, events and error checking, for the cuda
// backend's kernels, its library calls (cuBLASLt) and the kernel launcher. No CUDA header here:
// handles travel as void* (a cudaStream_t, a cudaEvent_t) and errors as the int of a cudaError_t,
// so any file can include it.
//
// Devices are those cudaGetDeviceCount reports; a process without a driver or a GPU sees none
// (device_count() == 0) and never fails at load time (cudart is linked statically and loads
// libcuda on first use).
#include <cstdint>
#include <memory>
#include <string>

#include "ember/backends/backend.h"

namespace ember::cuda {

/// The number of usable GPUs: 0 when there is no driver or no GPU; never throws.
int device_count() noexcept;
/// Why device_count() is 0, for error messages ("no CUDA driver", "no GPU", ...); empty when
/// there are devices.
std::string unavailable_reason();

struct DeviceInfo {
  std::string name;
  int major = 0, minor = 0, sms = 0;
  int64_t l2_bytes = 0, smem_per_block_optin = 0, total_bytes = 0;
};
/// Properties of device `dev` (queried once); throws DeviceError for a bad index.
const DeviceInfo& device_info(int dev);
/// Throws DeviceError unless `dev` names a usable device ("index 3 of 1 devices").
void check_index(int dev, const char* op);

/// cudaSetDevice(dev), skipped when this thread already has `dev` current.
void set_device(int dev);

/// The cudaStream_t of `s` (null: device `dev`'s default stream). Every device has one default
/// stream, created non-blocking on first use, that ember's work is ordered on.
void* stream_handle(Stream* s, int dev);
/// Device `dev`'s default stream as an ember Stream (what OpCall::stream null means).
Stream* default_stream(int dev);
/// A new non-blocking stream on `dev`, destroyed with the returned object.
std::unique_ptr<Stream> new_stream(int dev);
/// The device a stream of this backend belongs to.
int stream_device(const Stream& s);

/// Throws for a failed CUDA call: OutOfMemory for cudaErrorMemoryAllocation, DeviceError
/// otherwise, "[op] what: cudaErrorX (description)".
[[noreturn]] void fail(int cuda_error, const char* op, const char* what);
/// fail() unless `cuda_error` is cudaSuccess.
void check(int cuda_error, const char* op, const char* what);
/// After a kernel launch: cudaGetLastError (a bad launch configuration throws here, naming `op`);
/// with EMBER_CUDA_SYNC=1 in the environment it also waits for the kernel, so that a fault
/// inside it is reported by the op that launched it.
void after_launch(const char* op, int dev);
/// Whether EMBER_CUDA_SYNC=1 (read once).
bool sync_launches();

/// Events of the cuda backend: record on a stream, wait, synchronise, time.
struct CudaEvent final : Event {
  void* handle = nullptr;  // cudaEvent_t (timing enabled)
  int device = 0;
  CudaEvent() = default;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() override;
};
std::shared_ptr<CudaEvent> record_event(Stream* s, int dev);
/// Milliseconds between two completed events (synchronises on `end`).
float elapsed_ms(const Event& start, const Event& end);

/// Whether f32 products may use TF32 tensor cores (off unless set_allow_tf32(true)).
bool tf32_allowed();
void set_tf32_allowed(bool on);

/// Allocation statistics of one device (the counters of ember/cuda.h's memory_stats).
struct AllocStats {
  int64_t allocated = 0, reserved = 0, peak_allocated = 0;
  int64_t allocs = 0, frees = 0, cache_hits = 0;
};
AllocStats alloc_stats(int dev);
void reset_peak(int dev);
/// Waits for pending frees and returns the pool's unused blocks to the driver.
void empty_cache(int dev);
/// Stream-ordered device memory of `nbytes` on `dev` (the default stream's order), freed after
/// Storage::last_use's work; OutOfMemory after the cache was trimmed and the allocation retried.
std::shared_ptr<Storage> allocate(size_t nbytes, int dev);

/// The cuda backend (registered by detail::init).
std::unique_ptr<BackendImpl> make_cuda_backend();

}  // namespace ember::cuda

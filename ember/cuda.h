#pragma once
// The CUDA device's controls: how many GPUs, synchronisation, memory statistics and the cache,
// TF32, and the counts of ops that ran through the host fallback. No CUDA header; every function
// works in a build without CUDA (counts are 0, queries false, per-device calls throw DeviceError).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ember::cuda {

/// GPUs this process can use: 0 without CUDA in the build, without a driver, or without a GPU.
int device_count() noexcept;
/// device_count() > 0.
bool is_available();
/// Seeds the random generator of cuda:0 (torch::cuda::manual_seed) or of every GPU
/// (manual_seed_all); no-ops without a GPU, as in libtorch.
void manual_seed(uint64_t seed);
void manual_seed_all(uint64_t seed);
/// Waits for all work queued on cuda:`device` (fusion queues included) and rethrows errors its
/// kernels reported since the last sync.
void synchronize(int device = 0);

/// The stream-ordered allocator's counters for one device, in bytes and counts.
struct MemoryStats {
  int64_t allocated = 0;       // bytes of live tensors' storage
  int64_t reserved = 0;        // bytes the allocator holds from the driver (live + cached)
  int64_t peak_allocated = 0;  // the most `allocated` has been since start or reset_peak
  int64_t allocs = 0, frees = 0;
  int64_t cache_hits = 0;  // allocations served from cached blocks, without the driver
};
MemoryStats memory_stats(int device = 0);
/// Starts peak_allocated again from the current allocated bytes.
void reset_peak(int device = 0);
/// Returns the cached (free) blocks of `device` to the driver, after pending frees complete.
void empty_cache(int device = 0);

/// Whether f32 matrix products may use TF32 tensor cores (10-bit mantissa inputs): off by
/// default, as in PyTorch; set it for speed where that precision is enough.
void set_allow_tf32(bool allow);
bool allow_tf32();

/// Ops that ran through the host fallback (inputs copied to the host, the portable kernel run,
/// results copied back) because the cuda backend has no kernel for them yet, by op name, with
/// their counts, most frequent first. EMBER_CUDA_FALLBACK=error makes such an op throw
/// NotImplementedError instead.
std::vector<std::pair<std::string, int64_t>> fallback_stats();
void reset_fallback_stats();

}  // namespace ember::cuda

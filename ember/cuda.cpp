// ember/cuda.h: forwards to the CUDA runtime in builds with it (EMBER_CUDA), and answers "none"
// in builds without it.
#include "ember/cuda.h"

#include <algorithm>

#include "ember/backends/fallback.h"
#include "ember/device.h"
#include "ember/error.h"
#include "ember/ops/creation.h"
#ifdef EMBER_CUDA
#include "ember/backends/cuda/runtime.h"
#endif

namespace ember::cuda {

#ifdef EMBER_CUDA
// device_count, reset_peak and empty_cache are the runtime's own (runtime.cpp, allocator.cpp).
void synchronize(int device) { ember::synchronize(Device::cuda(device)); }
MemoryStats memory_stats(int device) {
  const AllocStats a = alloc_stats(device);
  return {a.allocated, a.reserved, a.peak_allocated, a.allocs, a.frees, a.cache_hits};
}
void set_allow_tf32(bool allow) { set_tf32_allowed(allow); }
bool allow_tf32() { return tf32_allowed(); }
#else
namespace {
[[noreturn]] void no_cuda(const char* op, int device) {
  detail::throw_device(op, "cuda:" + std::to_string(device) +
                               " requested, but this build of ember has no CUDA backend");
}
bool g_tf32 = false;
}  // namespace
int device_count() noexcept { return 0; }
void synchronize(int device) { no_cuda("cuda::synchronize", device); }
MemoryStats memory_stats(int device) { no_cuda("cuda::memory_stats", device); }
void reset_peak(int device) { no_cuda("cuda::reset_peak", device); }
void empty_cache(int device) { no_cuda("cuda::empty_cache", device); }
void set_allow_tf32(bool allow) { g_tf32 = allow; }
bool allow_tf32() { return g_tf32; }
#endif

bool is_available() { return device_count() > 0; }
void manual_seed(uint64_t seed) {
  if (is_available()) ember::manual_seed(Device::cuda(0), seed);
}
void manual_seed_all(uint64_t seed) {
  for (int i = 0; i < device_count(); ++i) ember::manual_seed(Device::cuda(i), seed);
}

std::vector<std::pair<std::string, int64_t>> fallback_stats() {
  std::vector<std::pair<std::string, int64_t>> v;
  for (int i = 0; i < kNumOps; ++i)
    if (int64_t n = detail::fallback_count(Backend::Cuda, OpId(i))) v.emplace_back(op_name(OpId(i)), n);
  std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return v;
}
void reset_fallback_stats() { detail::reset_fallback_counts(Backend::Cuda); }

}  // namespace ember::cuda

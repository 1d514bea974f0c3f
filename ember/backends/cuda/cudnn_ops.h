#pragma once
// What the cuda backend's cuDNN kernels expose to tests and benchmarks (private; no cuDNN or
// CUDA header here, unlike cudnn_runtime.h).
#include <cstdint>
#include <string>

namespace ember::cuda {

/// Whether cuDNN 9 was loaded (first call loads it); false without it or with EMBER_CUDNN=0.
bool cudnn_loaded();
/// Why it was not ("cuDNN not found: ..."); empty when it was.
std::string cudnn_missing_reason();

struct CudnnStats {
  int64_t plans = 0;      // distinct convolution problems planned (descriptors + algorithm)
  int64_t plan_hits = 0;  // convolution calls that found their plan cached
  int64_t served = 0;     // calls cuDNN ran (convolutions, pooling, batch norm)
};
CudnnStats cudnn_stats();

}  // namespace ember::cuda

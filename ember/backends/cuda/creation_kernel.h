#pragma once
// Ranges, the identity and the random draws of the cuda backend (creation_kernel.cu), behind a
// plain struct so that the nvcc-compiled file includes no heavy ember header. Element i of the
// output is a pure function of i, computed as flex's creation kernels compute it: the same
// values, and for the random ops the same Philox streams (seed, offset, i) as every device.
#include <cstdint>

namespace ember::cuda {

enum class Generate { ArangeInt, ArangeFloat, Linspace, Eye, Uniform, Normal, Randint };

/// Dtype codes in ember::DType's order (Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64).
struct GenerateArgs {
  Generate kind = Generate::Eye;
  int dtype = 0;
  int64_t numel = 0;
  void* out = nullptr;
  // ArangeFloat: start, step; Linspace: start, end, step; Uniform: low, high; Normal: mean, sd.
  double f0 = 0, f1 = 0, f2 = 0;
  // ArangeInt: start, step; Linspace: steps, half; Eye: columns; Randint: low, high - low.
  int64_t i0 = 0, i1 = 0;
  uint64_t seed = 0, offset = 0;
};

/// Launches the fill on `stream` (a cudaStream_t); returns the cudaError_t of the launch.
int launch_generate(const GenerateArgs& a, void* stream);

}  // namespace ember::cuda

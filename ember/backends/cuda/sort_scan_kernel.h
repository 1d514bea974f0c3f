#pragma once
// CUB's segmented sort and scan for the cuda backend (sort_kernel.cu, scan_kernel.cu), behind
// plain structs so that the nvcc-compiled files include no ember header. Both take their input
// as `lanes` contiguous rows of `n` elements (the op's dim moved last); the caller lays it out.
// Dtype codes are ember::DType's order (Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64).
#include <cstddef>
#include <cstdint>

namespace ember::cuda {

/// Device memory for a launch's scratch, from ember's stream-ordered pool: fn(ctx, bytes) returns
/// an address that stays valid for the work queued on the launch's stream.
struct DeviceAlloc {
  void* (*fn)(void* ctx, size_t bytes) = nullptr;
  void* ctx = nullptr;
  void* operator()(size_t bytes) const { return fn(ctx, bytes); }
};

/// A stable sort of every lane; the first k of each go to the outputs, which are laid out like
/// the op's result: element r of lane (o * inner + j) at ((o * k) + r) * inner + j.
struct SortArgs {
  const void* x = nullptr;  // [lanes, n], contiguous
  int dtype = 0;
  int64_t lanes = 0, n = 0, k = 0, inner = 1;
  bool descending = false;  // NaN first when descending, last when ascending
  void* vals = nullptr;     // null: indices only (argsort)
  int64_t* idx = nullptr;
};
/// Returns the cudaError_t of the launches.
int launch_sort(const SortArgs& a, DeviceAlloc alloc, void* stream);

/// Inclusive sum or product along every lane, accumulated as the host kernels do (double for
/// f32/f64, float for f16/bf16, wrapping int64 for integers); `out` has the input's layout and
/// dtype, which is one of I64, F16, BF16, F32, F64 (the caller casts other integers to I64).
struct ScanArgs {
  const void* x = nullptr;  // [lanes, n], contiguous
  void* out = nullptr;      // [lanes, n], contiguous, x's dtype
  int dtype = 0;
  int64_t lanes = 0, n = 0;
  bool prod = false;
};
int launch_scan(const ScanArgs& a, DeviceAlloc alloc, void* stream);

}  // namespace ember::cuda

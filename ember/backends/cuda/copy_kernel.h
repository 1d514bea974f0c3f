#pragma once
// The strided copy-and-cast kernel of the cuda backend (copy_kernel.cu), behind a plain struct so
// that the nvcc-compiled file includes no ember header. It serves copy, contiguous, cast, fill
// and full: dst[i] = convert(src[i]) over up to kMaxDims dims, each operand with its own strides
// (0 for a broadcast dim); src may be one scalar held in the arguments.
#include <cstdint>

namespace ember::cuda {

/// Dtype codes in ember::DType's order (Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64).
struct CopyArgs {
  static constexpr int kMaxDims = 8;
  int nd = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t dst_strides[kMaxDims] = {}, src_strides[kMaxDims] = {};  // elements
  void* dst = nullptr;
  const void* src = nullptr;  // null: `scalar` (of src_dtype) fills dst
  int dst_dtype = 0, src_dtype = 0;
  alignas(8) unsigned char scalar[8] = {};
};

/// Launches the copy on `stream` (a cudaStream_t); returns the cudaError_t of the launch.
int launch_copy(const CopyArgs& a, void* stream);

}  // namespace ember::cuda

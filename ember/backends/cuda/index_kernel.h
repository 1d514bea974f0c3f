#pragma once
// Gather, scatter, scatter-add and max pooling with indices for the cuda backend (index_kernel.cu),
// behind plain structs so that the nvcc-compiled file includes no ember header. Dtype codes are
// ember::DType's order (Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64).
#include <cstdint>

namespace ember::cuda {

/// Walks the positions p of a [sizes] grid (up to kMaxDims dims). At each, j = idx[p] (checked
/// against [0, n): a bad one fails the status word with code 1 and j as detail, and nothing is
/// written for it). gather: dst[p] = src[p with dim at j]. scatter_add: dst[p with dim at j] +=
/// alpha * src[p], atomically. Strides are in elements; a 0 stride broadcasts.
struct IndexArgs {
  static constexpr int kMaxDims = 8;
  int nd = 0, dim = 0;
  int64_t numel = 0, n = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t idx_st[kMaxDims] = {}, src_st[kMaxDims] = {}, dst_st[kMaxDims] = {};
  const int64_t* idx = nullptr;
  const void* src = nullptr;
  void* dst = nullptr;
  int dtype = 0;
  double alpha = 1;
  void* status = nullptr;  // 16 bytes: int32 code, int32 pad, int64 detail
};
int launch_gather(const IndexArgs& a, void* stream);
/// scatter: dst[p with dim at j] = src[p]; of repeated targets one write wins (unspecified which).
int launch_scatter(const IndexArgs& a, void* stream);
/// Types with a hardware atomic add: I32, I64, F16, BF16, F32, F64.
int launch_scatter_add(const IndexArgs& a, void* stream);
inline bool scatter_add_dtype(int code) { return code == 4 || code == 5 || code >= 6; }

/// Max pooling over `planes` contiguous h x w planes (1-d as h = 1) into packed oh x ow planes:
/// each window's first maximum, or its last NaN, and its position in the plane (torch's rule).
struct MaxPoolArgs {
  const void* x = nullptr;
  void* y = nullptr;
  int64_t* idx = nullptr;
  int dtype = 0;  // F16, BF16, F32 or F64
  int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};
int launch_max_pool(const MaxPoolArgs& a, void* stream);

}  // namespace ember::cuda

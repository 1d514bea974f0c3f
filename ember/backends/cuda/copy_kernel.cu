// The strided copy-and-cast kernel (copy_kernel.h). One kernel for every dtype pair: the dtypes
// are uniform over a launch, so the switches cost no divergence, and one instantiation keeps the
// build short. Conversions follow C++ as ember's host kernels do: floating to integer truncates
// (through int64), anything to bool tests for non-zero, f16/bf16 round to nearest even.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ember/backends/cuda/copy_kernel.h"

namespace ember::cuda {
namespace {

enum Code { kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64 };

// One value in the widest form of its kind.
struct Value {
  double f;
  long long i;
  bool is_float;
};

__device__ __forceinline__ Value load(const void* p, int code) {
  switch (code) {
    case kBool: return {0, *static_cast<const bool*>(p) ? 1 : 0, false};
    case kU8: return {0, *static_cast<const unsigned char*>(p), false};
    case kI8: return {0, *static_cast<const signed char*>(p), false};
    case kI16: return {0, *static_cast<const short*>(p), false};
    case kI32: return {0, *static_cast<const int*>(p), false};
    case kI64: return {0, *static_cast<const long long*>(p), false};
    case kF16: return {__half2float(*static_cast<const __half*>(p)), 0, true};
    case kBF16: return {__bfloat162float(*static_cast<const __nv_bfloat16*>(p)), 0, true};
    case kF32: return {*static_cast<const float*>(p), 0, true};
    default: return {*static_cast<const double*>(p), 0, true};
  }
}

__device__ __forceinline__ void store(void* p, int code, Value v) {
  const long long i = v.is_float ? (long long)v.f : v.i;
  const double f = v.is_float ? v.f : double(v.i);
  switch (code) {
    case kBool: *static_cast<bool*>(p) = v.is_float ? v.f != 0 : v.i != 0; break;
    case kU8: *static_cast<unsigned char*>(p) = (unsigned char)i; break;
    case kI8: *static_cast<signed char*>(p) = (signed char)i; break;
    case kI16: *static_cast<short*>(p) = (short)i; break;
    case kI32: *static_cast<int*>(p) = (int)i; break;
    case kI64: *static_cast<long long*>(p) = i; break;
    case kF16: *static_cast<__half*>(p) = __float2half_rn(v.is_float ? float(f) : float(v.i)); break;
    case kBF16:
      *static_cast<__nv_bfloat16*>(p) = __float2bfloat16_rn(v.is_float ? float(f) : float(v.i));
      break;
    case kF32: *static_cast<float*>(p) = v.is_float ? float(f) : float(v.i); break;
    default: *static_cast<double*>(p) = f; break;
  }
}

__host__ __device__ __forceinline__ int size_of(int code) {
  switch (code) {
    case kBool: case kU8: case kI8: return 1;
    case kI16: case kF16: case kBF16: return 2;
    case kI32: case kF32: return 4;
    default: return 8;
  }
}

__global__ void copy_kernel(CopyArgs a) {
  const int dsz = size_of(a.dst_dtype), ssz = size_of(a.src_dtype);
  Value scalar = {};
  if (!a.src) scalar = load(a.scalar, a.src_dtype);
  for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < a.numel;
       idx += (long long)gridDim.x * blockDim.x) {
    long long rest = idx, doff = 0, soff = 0;
    if (a.nd == 1) {  // the common case (coalesced dims): no 64-bit division per element
      doff = idx * a.dst_strides[0];
      soff = idx * a.src_strides[0];
    } else {
      for (int d = a.nd - 1; d >= 0; --d) {
        const long long k = rest % a.sizes[d];
        rest /= a.sizes[d];
        doff += k * a.dst_strides[d];
        soff += k * a.src_strides[d];
      }
    }
    const Value v = a.src ? load(static_cast<const char*>(a.src) + soff * ssz, a.src_dtype) : scalar;
    store(static_cast<char*>(a.dst) + doff * dsz, a.dst_dtype, v);
  }
}

}  // namespace

int launch_copy(const CopyArgs& a, void* stream) {
  if (a.numel == 0) return cudaSuccess;
  // Dense destinations: a same-dtype dense copy is the copy engine's memcpy and a fill whose
  // value is all zero bits (0 in every dtype; -0.0 is not) a memset, both at the memory's
  // bandwidth, which the element loop with its dtype switches does not reach.
  if (a.nd == 1 && a.dst_strides[0] == 1) {
    const size_t bytes = size_t(a.numel) * size_t(size_of(a.dst_dtype));
    if (a.src && a.src_dtype == a.dst_dtype && a.src_strides[0] == 1)
      return cudaMemcpyAsync(a.dst, a.src, bytes, cudaMemcpyDeviceToDevice, cudaStream_t(stream));
    bool zero = !a.src;
    for (unsigned char byte : a.scalar) zero = zero && byte == 0;
    if (zero) return cudaMemsetAsync(a.dst, 0, bytes, cudaStream_t(stream));
  }
  constexpr int kThreads = 256;
  long long blocks = (a.numel + kThreads - 1) / kThreads;
  if (blocks > 65536) blocks = 65536;  // grid-stride loop beyond
  copy_kernel<<<unsigned(blocks), kThreads, 0, cudaStream_t(stream)>>>(a);
  return cudaGetLastError();
}

}  // namespace ember::cuda

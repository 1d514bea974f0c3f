// The strided copy-and-cast kernel (copy_kernel.h). One kernel for every dtype pair: the dtypes
// are uniform over a launch, so the switches cost no divergence, and one instantiation keeps the
// build short. Conversions follow C++ as ember's host kernels do: floating to integer truncates
// (through int64), anything to bool tests for non-zero, f16/bf16 round to nearest even.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>

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

// A same-dtype strided copy (a transpose made contiguous, a slice written into a bigger
// tensor): no conversion, 32-bit index arithmetic, and T a chunk of up to 16 bytes when the
// innermost dim is contiguous on both sides (the host rescales sizes and strides to chunks).
struct SameArgs {
  int nd = 0;
  unsigned numel = 0;
  unsigned sizes[CopyArgs::kMaxDims] = {};
  int dst_strides[CopyArgs::kMaxDims] = {}, src_strides[CopyArgs::kMaxDims] = {};
  void* dst = nullptr;
  const void* src = nullptr;
};

template <class T>
__global__ void copy_same(SameArgs a) {
  for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < a.numel;
       idx += gridDim.x * blockDim.x) {
    unsigned rest = idx;
    int doff = 0, soff = 0;
    for (int d = a.nd - 1; d > 0; --d) {
      const unsigned k = rest % a.sizes[d];
      rest /= a.sizes[d];
      doff += int(k) * a.dst_strides[d];
      soff += int(k) * a.src_strides[d];
    }
    doff += int(rest) * a.dst_strides[0];
    soff += int(rest) * a.src_strides[0];
    static_cast<T*>(a.dst)[doff] = static_cast<const T*>(a.src)[soff];
  }
}

// The same-dtype form for `a` when its offsets fit 32 bits: chunks of the widest w bytes that
// the innermost dim's extent, every other stride and both addresses allow. False: not served.
bool launch_same(const CopyArgs& a, cudaStream_t stream) {
  static const bool off = [] {  // EMBER_CUDA_COPY_SAME=0: the general kernel (for comparisons)
    const char* e = std::getenv("EMBER_CUDA_COPY_SAME");
    return e && e[0] == '0' && !e[1];
  }();
  if (off || !a.src || a.src_dtype != a.dst_dtype || a.nd < 1) return false;
  const long long esize = size_of(a.dst_dtype);
  const int in = a.nd - 1;
  const bool packed = a.sizes[in] > 1 && a.dst_strides[in] == 1 && a.src_strides[in] == 1;
  long long w = esize;
  if (packed) {
    for (long long c = 16; c > esize; c /= 2) {
      bool ok = (a.sizes[in] * esize) % c == 0 && reinterpret_cast<uintptr_t>(a.dst) % c == 0 &&
                reinterpret_cast<uintptr_t>(a.src) % c == 0;
      for (int d = 0; ok && d < in; ++d)
        ok = (a.dst_strides[d] * esize) % c == 0 && (a.src_strides[d] * esize) % c == 0;
      if (ok) {
        w = c;
        break;
      }
    }
  }
  SameArgs s;
  s.nd = a.nd;
  long long numel = 1, dmax = 0, smax = 0;
  for (int d = 0; d < a.nd; ++d) {
    const bool inner = d == in && w != esize;
    const long long size = inner ? a.sizes[d] * esize / w : a.sizes[d];
    const long long ds = inner ? 1 : a.dst_strides[d] * esize / w;
    const long long ss = inner ? 1 : a.src_strides[d] * esize / w;
    if (ds < 0 || ss < 0) return false;
    numel *= size;
    dmax += (size - 1) * ds, smax += (size - 1) * ss;
    s.sizes[d] = unsigned(size), s.dst_strides[d] = int(ds), s.src_strides[d] = int(ss);
  }
  constexpr long long kMax = 0x7fffffffLL;
  if (numel > kMax || dmax > kMax || smax > kMax) return false;
  s.numel = unsigned(numel);
  s.dst = a.dst;
  s.src = a.src;
  constexpr int kThreads = 256;
  long long blocks = (numel + kThreads - 1) / kThreads;
  if (blocks > 65536) blocks = 65536;
  const dim3 g{unsigned(blocks)}, b{kThreads};
  switch (w) {
    case 16: copy_same<uint4><<<g, b, 0, stream>>>(s); break;
    case 8: copy_same<uint2><<<g, b, 0, stream>>>(s); break;
    case 4: copy_same<unsigned><<<g, b, 0, stream>>>(s); break;
    case 2: copy_same<unsigned short><<<g, b, 0, stream>>>(s); break;
    default: copy_same<unsigned char><<<g, b, 0, stream>>>(s); break;
  }
  return true;
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
  if (launch_same(a, cudaStream_t(stream))) return cudaGetLastError();
  constexpr int kThreads = 256;
  long long blocks = (a.numel + kThreads - 1) / kThreads;
  if (blocks > 65536) blocks = 65536;  // grid-stride loop beyond
  copy_kernel<<<unsigned(blocks), kThreads, 0, cudaStream_t(stream)>>>(a);
  return cudaGetLastError();
}

}  // namespace ember::cuda

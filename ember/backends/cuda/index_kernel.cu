// The gather / scatter-add walk and max pooling with indices (index_kernel.h). Gather moves
// elements by width (the dtype does not matter); scatter-add is typed, with atomics, so repeated
// indices add in an unspecified order (floating sums may differ from the host's in the last
// bits). Max pooling follows the host kernel: a value wins when it is larger or NaN.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ember/backends/cuda/index_kernel.h"

namespace ember::cuda {
namespace {

enum Code { kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64 };

struct Status {
  int code, pad;
  long long detail;
};

__device__ void fail(void* s, long long j) {
  auto* st = static_cast<Status*>(s);
  if (atomicCAS(&st->code, 0, 1) == 0) st->detail = j;
}

// Offsets of position `e` in the three operands; `jdim` the index into dim for src/dst.
struct Offsets {
  long long idx, src, dst, dim_src, dim_dst;
};
__device__ __forceinline__ Offsets offsets(const IndexArgs& a, long long e) {
  Offsets o{0, 0, 0, 0, 0};
  for (int d = a.nd - 1; d >= 0; --d) {
    const long long k = e % a.sizes[d];
    e /= a.sizes[d];
    o.idx += k * a.idx_st[d];
    o.src += k * a.src_st[d];
    o.dst += k * a.dst_st[d];
    if (d == a.dim) o.dim_src = k * a.src_st[d], o.dim_dst = k * a.dst_st[d];
  }
  return o;
}

// f(o, j) for every position whose index j is in [0, n); an index out of range fails the launch
// (the position is skipped).
template <class F>
__device__ __forceinline__ void for_each_index(const IndexArgs& a, F&& f) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < a.numel;
       e += (long long)gridDim.x * blockDim.x) {
    const Offsets o = offsets(a, e);
    const long long j = a.idx[o.idx];
    if (j < 0 || j >= a.n) {
      fail(a.status, j);
      continue;
    }
    f(o, j);
  }
}

template <class W>
__global__ void gather_kernel(IndexArgs a) {
  for_each_index(a, [&](const Offsets& o, long long j) {
    // src at p with dim moved to j: the position's own dim term replaced.
    const long long s = o.src - o.dim_src + j * a.src_st[a.dim];
    static_cast<W*>(a.dst)[o.dst] = static_cast<const W*>(a.src)[s];
  });
}

// scatter: dst[p with dim at j] = src[p] (repeated targets: one of the writes wins).
template <class W>
__global__ void scatter_kernel(IndexArgs a) {
  for_each_index(a, [&](const Offsets& o, long long j) {
    const long long d = o.dst - o.dim_dst + j * a.dst_st[a.dim];
    static_cast<W*>(a.dst)[d] = static_cast<const W*>(a.src)[o.src];
  });
}

__device__ __forceinline__ void add_to(int* p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void add_to(long long* p, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
__device__ __forceinline__ void add_to(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void add_to(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void add_to(__half* p, __half v) { atomicAdd(p, v); }
__device__ __forceinline__ void add_to(__nv_bfloat16* p, __nv_bfloat16 v) { atomicAdd(p, v); }

template <class T>
__device__ __forceinline__ T scaled(T v, double alpha) {
  return alpha == 1 ? v : T(double(v) * alpha);
}
template <>
__device__ __forceinline__ __half scaled(__half v, double alpha) {
  return alpha == 1 ? v : __float2half_rn(__half2float(v) * float(alpha));
}
template <>
__device__ __forceinline__ __nv_bfloat16 scaled(__nv_bfloat16 v, double alpha) {
  return alpha == 1 ? v : __float2bfloat16_rn(__bfloat162float(v) * float(alpha));
}

template <class T>
__global__ void scatter_add_kernel(IndexArgs a) {
  for_each_index(a, [&](const Offsets& o, long long j) {
    const long long d = o.dst - o.dim_dst + j * a.dst_st[a.dim];
    add_to(static_cast<T*>(a.dst) + d, scaled(static_cast<const T*>(a.src)[o.src], a.alpha));
  });
}

unsigned grid(long long items) {
  long long b = (items + 255) / 256;
  return unsigned(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

template <class T>
__device__ __forceinline__ float widen(T v) {
  return float(v);
}
__device__ __forceinline__ double widen(double v) { return v; }
__device__ __forceinline__ float widen(__half v) { return __half2float(v); }
__device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__global__ void max_pool_kernel(MaxPoolArgs a) {
  const long long per = a.oh * a.ow, total = a.planes * per;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const long long pl = e / per, oy = e % per / a.ow, ox = e % a.ow;
    const T* x = static_cast<const T*>(a.x) + pl * a.h * a.w;
    long long h0 = oy * a.sh - a.ph, w0 = ox * a.sw - a.pw;
    const long long h1 = min(h0 + (long long)(a.kh - 1) * a.dh + 1, (long long)a.h);
    const long long w1 = min(w0 + (long long)(a.kw - 1) * a.dw + 1, (long long)a.w);
    while (h0 < 0) h0 += a.dh;
    while (w0 < 0) w0 += a.dw;
    auto best = widen(x[h0 * a.w + w0]);
    long long at = h0 * a.w + w0;
    for (long long ih = h0; ih < h1; ih += a.dh)
      for (long long iw = w0; iw < w1; iw += a.dw) {
        const auto v = widen(x[ih * a.w + iw]);
        if (v > best || v != v) best = v, at = ih * a.w + iw;
      }
    static_cast<T*>(a.y)[e] = x[at];
    if (a.idx) a.idx[e] = at;
  }
}

// Gather and scatter move elements by width: the dtype does not matter.
template <template <class> class K>
int launch_by_width(const IndexArgs& a, void* stream) {
  if (a.numel == 0) return cudaSuccess;
  auto s = cudaStream_t(stream);
  switch (a.dtype) {
    case kBool:
    case kU8:
    case kI8:
      K<unsigned char>::run(a, s);
      break;
    case kI16:
    case kF16:
    case kBF16:
      K<unsigned short>::run(a, s);
      break;
    case kI32:
    case kF32:
      K<unsigned>::run(a, s);
      break;
    default:
      K<unsigned long long>::run(a, s);
      break;
  }
  return cudaGetLastError();
}
template <class W>
struct Gather {
  static void run(const IndexArgs& a, cudaStream_t s) {
    gather_kernel<W><<<grid(a.numel), 256, 0, s>>>(a);
  }
};
template <class W>
struct Scatter {
  static void run(const IndexArgs& a, cudaStream_t s) {
    scatter_kernel<W><<<grid(a.numel), 256, 0, s>>>(a);
  }
};

}  // namespace

int launch_gather(const IndexArgs& a, void* stream) { return launch_by_width<Gather>(a, stream); }
int launch_scatter(const IndexArgs& a, void* stream) { return launch_by_width<Scatter>(a, stream); }

int launch_scatter_add(const IndexArgs& a, void* stream) {
  if (a.numel == 0) return cudaSuccess;
  auto s = cudaStream_t(stream);
  switch (a.dtype) {
    case kI32:
      scatter_add_kernel<int><<<grid(a.numel), 256, 0, s>>>(a);
      break;
    case kI64:
      scatter_add_kernel<long long><<<grid(a.numel), 256, 0, s>>>(a);
      break;
    case kF16:
      scatter_add_kernel<__half><<<grid(a.numel), 256, 0, s>>>(a);
      break;
    case kBF16:
      scatter_add_kernel<__nv_bfloat16><<<grid(a.numel), 256, 0, s>>>(a);
      break;
    case kF32:
      scatter_add_kernel<float><<<grid(a.numel), 256, 0, s>>>(a);
      break;
    case kF64:
      scatter_add_kernel<double><<<grid(a.numel), 256, 0, s>>>(a);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

int launch_max_pool(const MaxPoolArgs& a, void* stream) {
  const long long total = a.planes * a.oh * a.ow;
  if (total == 0) return cudaSuccess;
  auto s = cudaStream_t(stream);
  switch (a.dtype) {
    case kF16:
      max_pool_kernel<__half><<<grid(total), 256, 0, s>>>(a);
      break;
    case kBF16:
      max_pool_kernel<__nv_bfloat16><<<grid(total), 256, 0, s>>>(a);
      break;
    case kF32:
      max_pool_kernel<float><<<grid(total), 256, 0, s>>>(a);
      break;
    case kF64:
      max_pool_kernel<double><<<grid(total), 256, 0, s>>>(a);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace ember::cuda

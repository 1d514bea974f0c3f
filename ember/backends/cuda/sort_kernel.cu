// Stable segmented sort of lanes through CUB (sort_scan_kernel.h). Each element becomes an
// unsigned key whose order is the op's: floats by their bits with the sign folded in, -0 as +0
// (they compare equal, so a stable sort keeps their order) and every NaN as the largest key;
// signed integers with the sign bit flipped; descending is the complement (NaN first, ties still
// in index order, as torch's stable sort). CUB sorts (key, index) pairs per lane; the values are
// then read back from the input by index, so they keep their exact bits.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cub/device/device_segmented_sort.cuh>

#include "ember/backends/cuda/sort_scan_kernel.h"

namespace ember::cuda {
namespace {

enum Code { kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64 };

// 16-bit floats by their bits.
struct F16Bits {
  unsigned short v;
};
struct BF16Bits {
  unsigned short v;
};

__device__ __forceinline__ unsigned fold16(unsigned u, unsigned nan_above) {
  if ((u & 0x7FFFu) > nan_above) return 0xFFFFu;
  if (u == 0x8000u) u = 0;
  return (u & 0x8000u) ? (~u & 0xFFFFu) : (u | 0x8000u);
}

__device__ __forceinline__ unsigned key_of(unsigned char x) { return x; }
__device__ __forceinline__ unsigned key_of(bool x) { return x ? 1u : 0u; }
__device__ __forceinline__ unsigned key_of(signed char x) { return unsigned(int(x)) ^ 0x80000000u; }
__device__ __forceinline__ unsigned key_of(short x) { return unsigned(int(x)) ^ 0x80000000u; }
__device__ __forceinline__ unsigned key_of(int x) { return unsigned(x) ^ 0x80000000u; }
__device__ __forceinline__ unsigned long long key_of(long long x) {
  return (unsigned long long)(x) ^ 0x8000000000000000ull;
}
__device__ __forceinline__ unsigned key_of(F16Bits x) { return fold16(x.v, 0x7C00u); }
__device__ __forceinline__ unsigned key_of(BF16Bits x) { return fold16(x.v, 0x7F80u); }
__device__ __forceinline__ unsigned key_of(float x) {
  if (x != x) return 0xFFFFFFFFu;
  unsigned u = __float_as_uint(x);
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ unsigned long long key_of(double x) {
  if (x != x) return 0xFFFFFFFFFFFFFFFFull;
  unsigned long long u = (unsigned long long)__double_as_longlong(x);
  if (u == 0x8000000000000000ull) u = 0;
  return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}

template <class T, class K>
__global__ void make_keys(const T* x, K* keys, long long* idx, long long total, long long n,
                          bool descending) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const K k = K(key_of(x[i]));
    keys[i] = descending ? K(~k) : k;
    idx[i] = i % n;
  }
}

template <class T>
__global__ void write_sorted(const T* x, const long long* sorted, long long lanes, long long n,
                             long long k, long long inner, T* vals, long long* idx) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < lanes * k;
       e += (long long)gridDim.x * blockDim.x) {
    const long long lane = e / k, r = e % k;
    const long long i = sorted[lane * n + r];
    const long long o = lane / inner, j = lane % inner;
    const long long at = (o * k + r) * inner + j;
    if (vals) vals[at] = x[lane * n + i];
    idx[at] = i;
  }
}

struct LaneStart {
  long long n;
  __host__ __device__ long long operator()(long long lane) const { return lane * n; }
};

unsigned grid(long long items) {
  long long b = (items + 255) / 256;
  return unsigned(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

template <class T, class K>
int sort_as(const SortArgs& a, DeviceAlloc alloc, cudaStream_t stream) {
  const long long total = a.lanes * a.n;
  K* keys = static_cast<K*>(alloc(sizeof(K) * size_t(total) * 2));
  long long* idx = static_cast<long long*>(alloc(sizeof(long long) * size_t(total) * 2));
  make_keys<T, K><<<grid(total), 256, 0, stream>>>(static_cast<const T*>(a.x), keys, idx, total,
                                                   a.n, a.descending);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  auto begin =
      thrust::make_transform_iterator(thrust::make_counting_iterator<long long>(0), LaneStart{a.n});
  size_t bytes = 0;
  cudaError_t e = cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, keys, keys + total, idx,
                                                            idx + total, total, a.lanes, begin,
                                                            begin + 1, stream);
  if (e != cudaSuccess) return e;
  void* temp = alloc(bytes ? bytes : 1);
  e = cub::DeviceSegmentedSort::StableSortPairs(temp, bytes, keys, keys + total, idx, idx + total,
                                                total, a.lanes, begin, begin + 1, stream);
  if (e != cudaSuccess) return e;
  write_sorted<T><<<grid(a.lanes * a.k), 256, 0, stream>>>(
      static_cast<const T*>(a.x), idx + total, a.lanes, a.n, a.k, a.inner, static_cast<T*>(a.vals),
      reinterpret_cast<long long*>(a.idx));
  return cudaGetLastError();
}

}  // namespace

int launch_sort(const SortArgs& a, DeviceAlloc alloc, void* stream) {
  if (a.lanes * a.n == 0 || a.k == 0) return cudaSuccess;
  auto s = cudaStream_t(stream);
  switch (a.dtype) {
    case kBool:
      return sort_as<bool, unsigned>(a, alloc, s);
    case kU8:
      return sort_as<unsigned char, unsigned>(a, alloc, s);
    case kI8:
      return sort_as<signed char, unsigned>(a, alloc, s);
    case kI16:
      return sort_as<short, unsigned>(a, alloc, s);
    case kI32:
      return sort_as<int, unsigned>(a, alloc, s);
    case kI64:
      return sort_as<long long, unsigned long long>(a, alloc, s);
    case kF16:
      return sort_as<F16Bits, unsigned>(a, alloc, s);
    case kBF16:
      return sort_as<BF16Bits, unsigned>(a, alloc, s);
    case kF32:
      return sort_as<float, unsigned>(a, alloc, s);
    default:
      return sort_as<double, unsigned long long>(a, alloc, s);
  }
}

}  // namespace ember::cuda

// Inclusive sums and products along lanes through CUB's scan by key (sort_scan_kernel.h): the
// key of element i is its lane, i / n, so one device-wide scan serves any number of lanes of
// any length. Values are widened on the way in and rounded on the way out, the accumulator
// staying wide as in the host kernels; integer scans wrap in two's complement like torch's.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>

#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>

#include "ember/backends/cuda/sort_scan_kernel.h"

namespace ember::cuda {
namespace {

enum Code { kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64 };

struct LaneOf {
  long long n;
  __host__ __device__ long long operator()(long long i) const { return i / n; }
};

template <class T, class A>
struct Widen {
  __device__ A operator()(T x) const { return A(x); }
};
template <>
struct Widen<__half, float> {
  __device__ float operator()(__half x) const { return __half2float(x); }
};
template <>
struct Widen<__nv_bfloat16, float> {
  __device__ float operator()(__nv_bfloat16 x) const { return __bfloat162float(x); }
};
template <class T, class A>
struct Narrow {
  __device__ T operator()(A x) const { return T(x); }
};
template <>
struct Narrow<__half, float> {
  __device__ __half operator()(float x) const { return __float2half_rn(x); }
};
template <>
struct Narrow<__nv_bfloat16, float> {
  __device__ __nv_bfloat16 operator()(float x) const { return __float2bfloat16_rn(x); }
};

template <class A, bool kProd>
struct Combine {
  __device__ A operator()(A a, A b) const { return kProd ? a * b : a + b; }
};
template <bool kProd>
struct Combine<long long, kProd> {  // two's complement, no UB
  __device__ long long operator()(long long a, long long b) const {
    const unsigned long long x = (unsigned long long)a, y = (unsigned long long)b;
    return (long long)(kProd ? x * y : x + y);
  }
};

template <class T, class A, bool kProd>
int scan_as(const ScanArgs& a, DeviceAlloc alloc, cudaStream_t stream) {
  const long long total = a.lanes * a.n;
  auto keys =
      thrust::make_transform_iterator(thrust::make_counting_iterator<long long>(0), LaneOf{a.n});
  auto in = thrust::make_transform_iterator(static_cast<const T*>(a.x), Widen<T, A>{});
  auto out = thrust::make_transform_output_iterator(static_cast<T*>(a.out), Narrow<T, A>{});
  size_t bytes = 0;
  cudaError_t e = cub::DeviceScan::InclusiveScanByKey(
      nullptr, bytes, keys, in, out, Combine<A, kProd>{}, total, ::cuda::std::equal_to<>{}, stream);
  if (e != cudaSuccess) return e;
  void* temp = alloc(bytes ? bytes : 1);
  return cub::DeviceScan::InclusiveScanByKey(temp, bytes, keys, in, out, Combine<A, kProd>{}, total,
                                             ::cuda::std::equal_to<>{}, stream);
}

template <class T, class A>
int scan_op(const ScanArgs& a, DeviceAlloc alloc, cudaStream_t s) {
  return a.prod ? scan_as<T, A, true>(a, alloc, s) : scan_as<T, A, false>(a, alloc, s);
}

}  // namespace

int launch_scan(const ScanArgs& a, DeviceAlloc alloc, void* stream) {
  if (a.lanes * a.n == 0) return cudaSuccess;
  auto s = cudaStream_t(stream);
  switch (a.dtype) {
    case kI64:
      return scan_op<long long, long long>(a, alloc, s);
    case kF16:
      return scan_op<__half, float>(a, alloc, s);
    case kBF16:
      return scan_op<__nv_bfloat16, float>(a, alloc, s);
    case kF32:
      return scan_op<float, double>(a, alloc, s);
    case kF64:
      return scan_op<double, double>(a, alloc, s);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace ember::cuda

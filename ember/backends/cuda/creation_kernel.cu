// Ranges, the identity and random draws (creation_kernel.h): out[i] = f(i), one thread an
// element, as flex's creation kernels compute f. The Philox rounds are ember/detail/philox.h's,
// written for the device (its std::array forms are host code); the conversions to the output
// dtype go through float for f16/bf16 and follow ember/detail/convert.h for integers, as the
// host's compute_t and from_double do.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "ember/backends/cuda/creation_kernel.h"
#include "ember/detail/convert.h"

namespace ember::cuda {
namespace {

enum Code { kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64 };

template <class T>
constexpr bool kHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return T(v);
}
// A double as T (flex's from_double): through float for the 16-bit floats, by ember's
// float-to-int rule for integers.
template <class T>
__device__ __forceinline__ T from_double(double v) {
  if constexpr (kHalf<T>) return from_float<T>(float(v));
  else if constexpr (std::is_floating_point_v<T>) return T(v);
  else return ::ember::detail::float_to_int<T>(v);
}
// An int64 as T (compute_t<T>(v)): integers wrap, floats round.
template <class T>
__device__ __forceinline__ T from_int(long long v) {
  if constexpr (kHalf<T>) return from_float<T>(float(v));
  else if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return T(v);
}

struct Words {
  unsigned w[4];
};
__device__ __forceinline__ Words philox_at(unsigned long long seed, unsigned long long offset,
                                           unsigned long long i) {
  unsigned c0 = unsigned(i), c1 = unsigned(i >> 32), c2 = unsigned(offset),
           c3 = unsigned(offset >> 32);
  unsigned k0 = unsigned(seed), k1 = unsigned(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const unsigned long long p0 = 0xD2511F53ull * c0, p1 = 0xCD9E8D57ull * c2;
    const unsigned n0 = unsigned(p1 >> 32) ^ c1 ^ k0, n2 = unsigned(p0 >> 32) ^ c3 ^ k1;
    c1 = unsigned(p1), c3 = unsigned(p0), c0 = n0, c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}
__device__ __forceinline__ float u01f(unsigned x) { return float(x >> 8) * (1.0f / 16777216.0f); }
__device__ __forceinline__ double u01d(unsigned a, unsigned b) {
  return double(((unsigned long long)a << 32 | b) >> 11) * (1.0 / 9007199254740992.0);
}

template <class T>
__device__ __forceinline__ T value_at(const GenerateArgs& a, long long i) {
  switch (a.kind) {
    case Generate::ArangeInt:  // start + step * i in unsigned arithmetic, as the host
      return from_int<T>((long long)((unsigned long long)a.i0 +
                                     (unsigned long long)a.i1 * (unsigned long long)i));
    case Generate::ArangeFloat:
      return from_double<T>(a.f0 + a.f1 * double(i));
    case Generate::Linspace:  // the first half counts up from start, the second down from end
      return from_double<T>(i < a.i1 ? a.f0 + a.f2 * double(i)
                                     : a.f1 - a.f2 * double(a.i0 - 1 - i));
    case Generate::Eye:
      return from_int<T>(a.i0 > 0 && i / a.i0 == i % a.i0 ? 1 : 0);
    case Generate::Randint: {
      const Words r = philox_at(a.seed, a.offset, (unsigned long long)i);
      const unsigned long long x = (unsigned long long)r.w[0] << 32 | r.w[1];
      return from_int<T>((long long)((unsigned long long)a.i0 + x % (unsigned long long)a.i1));
    }
    default:
      break;
  }
  if constexpr (std::is_integral_v<T>) {
    return T(0);  // the random floats have float dtypes only
  } else {
    const Words r = philox_at(a.seed, a.offset, (unsigned long long)i);
    if (a.kind == Generate::Normal) {  // Box-Muller on two uniforms in (0, 1]
      const double u1 = 1.0 - u01d(r.w[0], r.w[1]), u2 = u01d(r.w[2], r.w[3]);
      const double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
      return from_double<T>(a.f0 + a.f1 * z);
    }
    if constexpr (std::is_same_v<T, double>) {
      return a.f0 + (a.f1 - a.f0) * u01d(r.w[0], r.w[1]);
    } else {
      // In float, as the host draws every non-double dtype; rounding that reaches `high` there
      // keeps the interval half-open (a f16/bf16 result may still round up to it, as on the host).
      const float lo = float(a.f0), hi = float(a.f1);
      const float v = lo + float(a.f1 - a.f0) * u01f(r.w[0]);
      return from_float<T>(v >= hi && a.f1 > a.f0 ? lo : v);
    }
  }
}

template <class T>
__global__ void generate_kernel(GenerateArgs a) {
  T* out = static_cast<T*>(a.out);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < a.numel;
       i += (long long)gridDim.x * blockDim.x)
    out[i] = value_at<T>(a, i);
}

template <class T>
int launch_as(const GenerateArgs& a, cudaStream_t s) {
  const long long threads = 256;
  long long blocks = (a.numel + threads - 1) / threads;
  if (blocks > 65535LL * 16) blocks = 65535LL * 16;
  generate_kernel<T><<<unsigned(blocks), unsigned(threads), 0, s>>>(a);
  return cudaGetLastError();
}

}  // namespace

int launch_generate(const GenerateArgs& a, void* stream) {
  if (a.numel <= 0) return cudaSuccess;
  auto s = cudaStream_t(stream);
  switch (a.dtype) {
    case kBool: return launch_as<bool>(a, s);
    case kU8: return launch_as<unsigned char>(a, s);
    case kI8: return launch_as<signed char>(a, s);
    case kI16: return launch_as<short>(a, s);
    case kI32: return launch_as<int>(a, s);
    case kI64: return launch_as<long long>(a, s);
    case kF16: return launch_as<__half>(a, s);
    case kBF16: return launch_as<__nv_bfloat16>(a, s);
    case kF32: return launch_as<float>(a, s);
    case kF64: return launch_as<double>(a, s);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ember::cuda

#pragma once
// Row-wise building blocks for the flex backend's fused nn kernels (private): a parallel loop over
// contiguous rows that routes f16/bf16 through float scratch, lane reductions the compiler
// vectorises without -ffast-math, and a branch-free exp that vectorises (libm's does not).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"

namespace ember::flex {

/// e^x in float for the fused row kernels, whose arguments are <= 0 (x - max): within 2 ulp for
/// x in [-87.3, 88.3], 0 below, e^88.3 above. Faster than kl::exp, which also keeps subnormal
/// results and overflows to inf as torch does; use kl::exp anywhere arguments can be large.
/// Cephes' expf: x = n ln2 + g, e^g by a degree-6 polynomial, 2^n built in the exponent bits.
/// Written so that GCC and Clang vectorise it: no lower clamp (the final select covers that
/// range), no float-to-int casts.
inline float exp_fast(float x) {
  constexpr float kHi = 88.3f, kLo = -87.3365447f;
  const float xc = x > kHi ? kHi : x;  // NaN passes through
  // Round x * log2(e) to the nearest integer with the 1.5 * 2^23 trick.
  const float r = xc * 1.44269504088896341f + 12582912.0f;
  const float fn = r - 12582912.0f;
  const uint32_t n = std::bit_cast<uint32_t>(r) - 0x4B400000u;
  const float g = (xc - fn * 0.693359375f) - fn * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * g + 1.3981999507e-3f;
  y = y * g + 8.3334519073e-3f;
  y = y * g + 4.1665795894e-2f;
  y = y * g + 1.6666665459e-1f;
  y = y * g + 5.0000001201e-1f;
  y = y * g * g + g + 1.0f;
  // Unsigned arithmetic: below kLo the exponent wraps harmlessly and the select discards it.
  const float scale = std::bit_cast<float>((n + 127u) << 23);
  return x < kLo ? 0.0f : y * scale;
}
inline double exp_fast(double x) { return std::exp(x); }

inline constexpr int kLanes = 16;

/// Sum of f(i) for i in [0, n) with kLanes independent accumulators.
template <class C, class F>
inline C lane_sum(int64_t n, const F& f) {
  C acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += f(i + j);
  for (; i < n; ++i) acc[0] += f(i);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  return acc[0];
}

/// Largest of x[0..n) (-inf when empty); NaNs are skipped, which callers' later arithmetic
/// propagates anyway.
template <class C>
inline C lane_max(const C* x, int64_t n) {
  constexpr int kMaxLanes = 32;
  C acc[kMaxLanes];
  std::fill(acc, acc + kMaxLanes, -std::numeric_limits<C>::infinity());
  int64_t i = 0;
  for (; i + kMaxLanes <= n; i += kMaxLanes) {
    // Kept a loop: fully unrolled, GCC leaves a select-based max scalar; as a loop it vectorises.
#pragma GCC unroll 1
    for (int j = 0; j < kMaxLanes; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  }
  C m = acc[0];
  for (int j = 1; j < kMaxLanes; ++j) m = acc[j] > m ? acc[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

/// Calls f(row, x_row, y_row) for each of `rows` contiguous rows of length n, in parallel.
/// f sees compute-type rows: T's own storage for float/double, float scratch for f16/bf16.
template <class T, class F>
void run_rows(const T* x, T* y, int64_t rows, int64_t n, const F& f) {
  using C = compute_t<T>;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, C>) {
      for (int64_t r = b; r < e; ++r) f(r, x + r * n, y + r * n);
    } else {
      std::vector<C> xs(static_cast<size_t>(n)), ys(static_cast<size_t>(n));
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * n;
        for (int64_t i = 0; i < n; ++i) xs[size_t(i)] = C(xr[i]);
        f(r, xs.data(), ys.data());
        T* yr = y + r * n;
        for (int64_t i = 0; i < n; ++i) yr[i] = T(ys[size_t(i)]);
      }
    }
  });
}

/// A float tensor's contents as a contiguous tensor of compute type C (empty when undefined).
inline Tensor as_compute(const Tensor& t, DType c) {
  if (!t.defined()) return t;
  return (t.dtype() == c ? t : t.to(c)).contiguous();
}

}  // namespace ember::flex

#pragma once
// Generic scalar math: the one definition of each elementwise function. Eager loops instantiate it
// with T = float/double; the kernel language instantiates it with T = kl::Expr (kl/expr.h) to
// build IR.
// Rules: branch-free (select, not if), maths through kl:: overloads, literals as T(...).
#include <cmath>
#include <cstdint>
#include <limits>

namespace ember::kl {

// --- primitive overloads (float and double only; f16/bf16 compute in float) ---
#define EMBER_KL_FN1(name, stdname)                       \
  inline float name(float x) { return std::stdname(x); }  \
  inline double name(double x) { return std::stdname(x); }
EMBER_KL_FN1(exp2, exp2) EMBER_KL_FN1(expm1, expm1) EMBER_KL_FN1(log, log)
EMBER_KL_FN1(log2, log2) EMBER_KL_FN1(log10, log10) EMBER_KL_FN1(log1p, log1p)
EMBER_KL_FN1(sqrt, sqrt) EMBER_KL_FN1(sin, sin) EMBER_KL_FN1(cos, cos) EMBER_KL_FN1(tan, tan)
EMBER_KL_FN1(asin, asin) EMBER_KL_FN1(acos, acos) EMBER_KL_FN1(atan, atan)
EMBER_KL_FN1(sinh, sinh) EMBER_KL_FN1(cosh, cosh)
EMBER_KL_FN1(asinh, asinh) EMBER_KL_FN1(acosh, acosh) EMBER_KL_FN1(atanh, atanh)
EMBER_KL_FN1(erf, erf) EMBER_KL_FN1(floor, floor) EMBER_KL_FN1(ceil, ceil)
EMBER_KL_FN1(trunc, trunc) EMBER_KL_FN1(round_even, nearbyint) EMBER_KL_FN1(fabs, fabs)
#undef EMBER_KL_FN1
inline double exp(double x) { return std::exp(x); }
/// exp for float without a libm call, so loops over it vectorise: Cody-Waite reduction
/// x = n ln2 + r, a degree-6 polynomial for e^r, and 2^n built from exponent bits (split in two
/// factors so results down to the subnormal range stay right). Max error ~1.5 ulp.
inline float exp(float x) {
  // NaN takes the lower clamp (so the float-to-int conversion below stays defined) and is
  // returned as itself at the end.
  const float xc = !(x >= -104.0f) ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float n = __builtin_nearbyintf(xc * 1.44269504088896341f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t ni = int32_t(n);
  const int32_t h = ni / 2;
  const float s1 = __builtin_bit_cast(float, (h + 127) << 23);
  const float s2 = __builtin_bit_cast(float, (ni - h + 127) << 23);
  float res = p * s1 * s2;
  res = x > 88.7228391f ? __builtin_inff() : res;
  return x != x ? x : res;
}
inline double tanh(double x) { return std::tanh(x); }
/// tanh for float without a libm call, so loops over it vectorise (an LSTM step is mostly
/// sigmoid and tanh): the odd Taylor polynomial to x^19 below |x| = 0.625, above it
/// 1 - 2 / (exp(2|x|) + 1), the sign put back. Max error 1.3 ulp; +-inf give +-1, NaN stays NaN.
inline float tanh(float x) {
  const float a = __builtin_fabsf(x), x2 = x * x;
  float p = -2.39129114e-4f;
  p = p * x2 + 5.90027440e-4f;
  p = p * x2 + -1.45583438e-3f;
  p = p * x2 + 3.59212803e-3f;
  p = p * x2 + -8.86323552e-3f;
  p = p * x2 + 2.18694885e-2f;
  p = p * x2 + -5.39682540e-2f;
  p = p * x2 + 1.33333333e-1f;
  p = p * x2 + -3.33333333e-1f;
  const float small = p * x2 * x + x;
  const float big = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);
  return __builtin_copysignf(a < 0.625f ? small : big, x);
}
inline float atan2(float a, float b) { return std::atan2(a, b); }
inline double atan2(double a, double b) { return std::atan2(a, b); }
inline float pow(float a, float b) { return std::pow(a, b); }
inline double pow(double a, double b) { return std::pow(a, b); }
inline float fmod(float a, float b) { return std::fmod(a, b); }
inline double fmod(double a, double b) { return std::fmod(a, b); }
inline float copysign(float a, float b) { return std::copysign(a, b); }
inline double copysign(double a, double b) { return std::copysign(a, b); }
inline bool isnan(float x) { return std::isnan(x); }
inline bool isnan(double x) { return std::isnan(x); }
inline bool isinf(float x) { return std::isinf(x); }
inline bool isinf(double x) { return std::isinf(x); }

/// cond ? a : b without a branch on the value.
template <class C, class T> inline T select(C cond, T a, T b) { return cond ? a : b; }
/// std::max/min semantics: a NaN in the first argument propagates.
template <class T> inline T max(T a, T b) { return select(a < b, b, a); }
template <class T> inline T min(T a, T b) { return select(b < a, b, a); }
/// NaN and infinity of T; the kernel language's Expr specialises this (std::numeric_limits does
/// not know a dtype that is only known while tracing).
template <class T> struct num_traits {
  static constexpr bool has_nan = std::numeric_limits<T>::has_quiet_NaN;
  static T nan() { return std::numeric_limits<T>::quiet_NaN(); }
  static T inf() { return std::numeric_limits<T>::infinity(); }
};
/// The constant v with the type of `like` (for Expr: its dtype and lanes). Needed where both
/// operands would otherwise be literals, as in select(c, lit(x, 1), lit(x, 0)).
template <class T> inline T lit(const T&, double v) { return T(v); }

/// NaN-propagating max/min (torch.maximum/minimum).
template <class T> inline T maximum(T a, T b) {
  if constexpr (num_traits<T>::has_nan)
    return select(isnan(a) || isnan(b), num_traits<T>::nan(), max(a, b));
  else
    return max(a, b);
}
template <class T> inline T minimum(T a, T b) {
  if constexpr (num_traits<T>::has_nan)
    return select(isnan(a) || isnan(b), num_traits<T>::nan(), min(a, b));
  else
    return min(a, b);
}

// --- composite functions ---
template <class T> inline T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }
template <class T> inline T relu(T x) { return select(x < T(0), T(0), x); }  // NaN stays NaN
template <class T> inline T rsqrt(T x) { return T(1) / sqrt(x); }
template <class T> inline T gelu(T x) { return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440))); }
template <class T> inline T gelu_tanh(T x) {
  const T k = T(0.79788456080286535588);  // sqrt(2/pi)
  return T(0.5) * x * (T(1) + tanh(k * (x + T(0.044715) * x * x * x)));
}
template <class T> inline T silu(T x) { return x / (T(1) + exp(-x)); }
template <class T> inline T softplus(T x, T beta, T threshold) {
  return select(x * beta > threshold, x, log1p(exp(x * beta)) / beta);
}
template <class T> inline T mish(T x) { return x * tanh(softplus(x, T(1), T(20))); }
template <class T> inline T elu(T x, T alpha) { return select(x > T(0), x, alpha * expm1(x)); }
template <class T> inline T leaky_relu(T x, T slope) { return select(x > T(0), x, x * slope); }
template <class T> inline T hardsigmoid(T x) { return min(max(x + T(3), T(0)), T(6)) / T(6); }
template <class T> inline T hardswish(T x) { return x * hardsigmoid(x); }
template <class T> inline T sign(T x) {
  return select(x > T(0), lit(x, 1), select(x < T(0), lit(x, -1), lit(x, 0)));
}

/// Inverse error function: Giles' single-precision approximation (both of its branches, then a
/// select) refined by two Newton steps.
template <class T> inline T erfinv(T y) {
  const T w = -log((T(1) - y) * (T(1) + y));
  const T wc = w - T(2.5);  // central branch, w < 5
  T p = T(2.81022636e-08);
  p = T(3.43273939e-07) + p * wc; p = T(-3.5233877e-06) + p * wc;
  p = T(-4.39150654e-06) + p * wc; p = T(0.00021858087) + p * wc;
  p = T(-0.00125372503) + p * wc; p = T(-0.00417768164) + p * wc;
  p = T(0.246640727) + p * wc; p = T(1.50140941) + p * wc;
  const T wt = sqrt(w) - T(3);  // tail branch
  T q = T(-0.000200214257);
  q = T(0.000100950558) + q * wt; q = T(0.00134934322) + q * wt;
  q = T(-0.00367342844) + q * wt; q = T(0.00573950773) + q * wt;
  q = T(-0.0076224613) + q * wt; q = T(0.00943887047) + q * wt;
  q = T(1.00167406) + q * wt; q = T(2.83297682) + q * wt;
  T x = select(w < T(5), p, q) * y;
  const T two_over_sqrt_pi = T(1.12837916709551257390);
  for (int i = 0; i < 2; ++i) x = x - (erf(x) - y) / (two_over_sqrt_pi * exp(-x * x));
  const T inf = num_traits<T>::inf();
  x = select(y == T(1), inf, x);
  x = select(y == T(-1), -inf, x);
  return select(y > T(1) || y < T(-1), num_traits<T>::nan(), x);
}

}  // namespace ember::kl

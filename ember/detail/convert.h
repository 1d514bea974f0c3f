#pragma once
// Float -> integer conversion with a result defined for every input. C++ leaves a float outside
// the target's range (or NaN) undefined; ember gives what PyTorch gives on x86, everywhere:
//   to int64: trunc(x) for -2^63 <= x < 2^63, else (NaN, +-inf, out of range) INT64_MIN;
//   to int32: trunc(x) inside int32's range, else INT32_MIN;
//   to int16, int8, uint8: the int32 result wrapped to the narrower type (its low bits), so
//     300.7 -> uint8 44, -5 -> uint8 251, and NaN, inf, 1e10 -> 0; except float64 -> uint8,
//     which wraps the int64 result (as torch's kernel does): -2147483649.0 -> 255;
//   to bool: x != 0 (NaN is true).
// Integer -> narrower integer wraps (two's complement), as C++20 defines.
#include <cstdint>
#include <type_traits>

namespace ember::detail {

template <class F>
constexpr int64_t float_to_i64(F x) {
  // 2^63 is exact in float and double; values in (-2^63 - 1, -2^63) give INT64_MIN either way.
  return x >= F(-9223372036854775808.0) && x < F(9223372036854775808.0) ? int64_t(x) : INT64_MIN;
}

template <class F>
constexpr int32_t float_to_i32(F x) {
  // For float the lower bound rounds to -2^31, whose result is INT32_MIN either way.
  return x > F(-2147483649.0) && x < F(2147483648.0) ? int32_t(x) : INT32_MIN;
}

/// x converted to the integral type To by the rules above.
template <class To, class F>
constexpr To float_to_int(F x) {
  static_assert(std::is_integral_v<To> && std::is_floating_point_v<F>);
  if constexpr (std::is_same_v<To, bool>)
    return x != F(0);
  else if constexpr (sizeof(To) == 8 || (std::is_same_v<To, uint8_t> && sizeof(F) == 8))
    return To(float_to_i64(x));
  else
    return To(float_to_i32(x));
}

}  // namespace ember::detail

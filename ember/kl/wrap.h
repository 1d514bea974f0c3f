#pragma once
// Integer arithmetic that wraps around (two's complement), as PyTorch's integer tensors do,
// without the undefined behaviour of signed overflow in C++: the work is done in an unsigned type
// at least as wide as `unsigned` (so uint16 * uint16 cannot overflow a promoted int either).
// For floating-point and bool operands these are the plain operators.
#include <type_traits>

namespace ember::kl {

namespace detail {
template <class T>
inline constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
using wide_unsigned_t =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
}  // namespace detail

template <class T> inline T wrapping_add(T a, T b) {
  if constexpr (detail::kWraps<T>) {
    using W = detail::wide_unsigned_t<T>;
    return T(W(W(a) + W(b)));
  } else {
    return T(a + b);
  }
}
template <class T> inline T wrapping_sub(T a, T b) {
  if constexpr (detail::kWraps<T>) {
    using W = detail::wide_unsigned_t<T>;
    return T(W(W(a) - W(b)));
  } else {
    return T(a - b);
  }
}
template <class T> inline T wrapping_mul(T a, T b) {
  if constexpr (detail::kWraps<T>) {
    using W = detail::wide_unsigned_t<T>;
    return T(W(W(a) * W(b)));
  } else {
    return T(a * b);
  }
}
/// -x; the most negative value stays itself (wrapping_neg(INT64_MIN) == INT64_MIN, as in torch).
template <class T> inline T wrapping_neg(T x) {
  if constexpr (detail::kWraps<T>) return wrapping_sub(T(0), x);
  else return T(-x);
}
/// |x|; wrapping_abs(INT64_MIN) == INT64_MIN, as in torch.
template <class T> inline T wrapping_abs(T x) {
  if constexpr (std::is_unsigned_v<T>) return x;
  else return x < T(0) ? wrapping_neg(x) : x;
}

}  // namespace ember::kl

#pragma once
// Scalar: a number that is not a tensor (a fill value, the `2` in `x + 2`).
#include <cstdint>
#include <type_traits>
#include <utility>

#include "ember/detail/convert.h"
#include "ember/dtype.h"

namespace ember {

namespace detail {
/// std::complex<float/double> and look-alikes (value_type, real(), imag()), detected without
/// including <complex> here.
template <class C, class = void> struct complex_like : std::false_type {};
template <class C>
struct complex_like<C, std::enable_if_t<std::is_floating_point_v<typename C::value_type> &&
                                        sizeof(C) == 2 * sizeof(typename C::value_type) &&
                                        std::is_same_v<decltype(std::declval<const C&>().imag()),
                                                       typename C::value_type>>>
    : std::true_type {};
template <class C> inline constexpr bool complex_like_v = complex_like<C>::value;
/// A complex value's parts, for code that does not include <complex>.
template <class T> struct ComplexParts {
  using value_type = T;
  T re, im;
  T real() const { return re; }
  T imag() const { return im; }
};
}  // namespace detail

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float, Complex };
  Scalar() = default;
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Scalar(T v) {  // NOLINT: implicit, like a number
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      i_ = int64_t(v);
    } else {
      kind_ = Kind::Float;
      d_ = double(v);
    }
  }
  /// A complex number: std::complex<float> or std::complex<double>.
  template <class C, std::enable_if_t<detail::complex_like_v<C>, int> = 0>
  Scalar(const C& v)  // NOLINT: implicit, like a number
      : kind_(Kind::Complex), d_(double(v.real())), im_(double(v.imag())) {}
  Scalar(Half v) : Scalar(float(v)) {}      // NOLINT
  Scalar(BFloat16 v) : Scalar(float(v)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_complex() const { return kind_ == Kind::Complex; }
  /// The imaginary part (0 for every kind but Complex).
  double imag() const { return im_; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  /// The value (a complex one's real part: the imaginary part is dropped, as in a cast).
  double to_double() const { return has_d() ? d_ : double(i_); }
  /// A float converts by ember's float -> int rule (ember/detail/convert.h), never UB.
  int64_t to_int() const { return has_d() ? detail::float_to_i64(d_) : i_; }
  bool to_bool() const { return has_d() ? (d_ != 0 || im_ != 0) : i_ != 0; }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>)
      return has_d() ? detail::float_to_int<T>(d_) : T(i_);
    else if constexpr (detail::complex_like_v<T>)
      return T(typename T::value_type(to_double()), typename T::value_type(im_));
    else return T(to_double());
  }
  // libtorch's names (t.item().toFloat()); the conversions are those of to<T>().
  float toFloat() const { return to<float>(); }     // NOLINT(readability-identifier-naming)
  double toDouble() const { return to<double>(); }  // NOLINT(readability-identifier-naming)
  int64_t toLong() const { return to<int64_t>(); }  // NOLINT(readability-identifier-naming)
  int toInt() const { return to<int>(); }           // NOLINT(readability-identifier-naming)
  bool toBool() const { return to_bool(); }         // NOLINT(readability-identifier-naming)
  bool isFloatingPoint() const { return is_floating(); }  // NOLINT(readability-identifier-naming)
  bool isIntegral(bool include_bool) const {              // NOLINT(readability-identifier-naming)
    return is_integral() || (include_bool && is_bool());
  }
  bool isBoolean() const { return is_bool(); }     // NOLINT(readability-identifier-naming)
  bool isComplex() const { return is_complex(); }  // NOLINT(readability-identifier-naming)
  /// Whether this value converts to dtype `d` without overflow (libtorch's checked_convert):
  /// an integer must lie in d's range; a finite float must, after truncation, lie in an integer
  /// d's range or, for a floating d, round to a finite value; inf and NaN convert only to a
  /// floating d or bool; anything converts to bool.
  bool fits(DType d) const;
  /// The dtype a 0-d tensor made from this scalar gets: bool, int64, the default float, or the
  /// complex dtype of the default float (complex64 for float32).
  DType dtype() const {
    return kind_ == Kind::Bool ? DType::Bool
           : kind_ == Kind::Int ? DType::I64
           : kind_ == Kind::Float ? default_dtype()
                                  : complex_dtype_for(default_dtype());
  }
  /// Same kind and same value (bitwise for floats: NaN equals NaN, 0.0 differs from -0.0), so
  /// calls that differ only in a scalar never share a cache entry by accident.
  friend bool operator==(const Scalar& a, const Scalar& b) {
    return a.kind_ == b.kind_ && a.i_ == b.i_ && __builtin_memcmp(&a.d_, &b.d_, sizeof a.d_) == 0 &&
           __builtin_memcmp(&a.im_, &b.im_, sizeof a.im_) == 0;
  }
  /// The value's bits (with the kind), for hashing.
  uint64_t bits() const {
    uint64_t u, w;
    __builtin_memcpy(&u, &d_, sizeof u);
    __builtin_memcpy(&w, &im_, sizeof w);
    return (u ^ uint64_t(i_) * 0x9E3779B97F4A7C15ull ^ w * 0xC2B2AE3D27D4EB4Full) + uint64_t(kind_);
  }

 private:
  bool has_d() const { return kind_ == Kind::Float || kind_ == Kind::Complex; }
  Kind kind_ = Kind::Int;
  int64_t i_ = 0;
  double d_ = 0;
  double im_ = 0;
};

}  // namespace ember

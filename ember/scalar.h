#pragma once
// Scalar: a number that is not a tensor (a fill value, the `2` in `x + 2`).
#include <cstdint>
#include <type_traits>

#include "ember/detail/convert.h"
#include "ember/dtype.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };
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
  Scalar(Half v) : Scalar(float(v)) {}      // NOLINT
  Scalar(BFloat16 v) : Scalar(float(v)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  double to_double() const { return kind_ == Kind::Float ? d_ : double(i_); }
  /// A float converts by ember's float -> int rule (ember/detail/convert.h), never UB.
  int64_t to_int() const { return kind_ == Kind::Float ? detail::float_to_i64(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0 : i_ != 0; }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>)
      return kind_ == Kind::Float ? detail::float_to_int<T>(d_) : T(i_);
    else return T(to_double());
  }
  /// Whether this value converts to dtype `d` without overflow (libtorch's checked_convert):
  /// an integer must lie in d's range; a finite float must, after truncation, lie in an integer
  /// d's range or, for a floating d, round to a finite value; inf and NaN convert only to a
  /// floating d or bool; anything converts to bool.
  bool fits(DType d) const;
  /// The dtype a 0-d tensor made from this scalar gets: bool, int64 or the default float.
  DType dtype() const {
    return kind_ == Kind::Bool ? DType::Bool : kind_ == Kind::Int ? DType::I64 : default_dtype();
  }
  /// Same kind and same value (bitwise for floats: NaN equals NaN, 0.0 differs from -0.0), so
  /// calls that differ only in a scalar never share a cache entry by accident.
  friend bool operator==(const Scalar& a, const Scalar& b) {
    return a.kind_ == b.kind_ && a.i_ == b.i_ && __builtin_memcmp(&a.d_, &b.d_, sizeof a.d_) == 0;
  }
  /// The value's bits (with the kind), for hashing.
  uint64_t bits() const {
    uint64_t u;
    __builtin_memcpy(&u, &d_, sizeof u);
    return (u ^ uint64_t(i_) * 0x9E3779B97F4A7C15ull) + uint64_t(kind_);
  }

 private:
  Kind kind_ = Kind::Int;
  int64_t i_ = 0;
  double d_ = 0;
};

}  // namespace ember

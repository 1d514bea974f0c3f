#pragma once
// Scalar: a number that is not a tensor (a fill value, the `2` in `x + 2`).
#include <cstdint>
#include <type_traits>

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
  int64_t to_int() const { return kind_ == Kind::Float ? int64_t(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0 : i_ != 0; }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return T(to_int());
    else return T(to_double());
  }
  /// The dtype a 0-d tensor made from this scalar gets: bool, int64 or the default float.
  DType dtype() const {
    return kind_ == Kind::Bool ? DType::Bool : kind_ == Kind::Int ? DType::I64 : default_dtype();
  }

 private:
  Kind kind_ = Kind::Int;
  int64_t i_ = 0;
  double d_ = 0;
};

}  // namespace ember

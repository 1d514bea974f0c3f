#include "ember/scalar.h"

#include <cmath>
#include <limits>

namespace ember {
namespace {

template <class T>
bool int_fits(double v) {
  // Compared as doubles: the limits of every integer dtype but int64 are exact, and int64's
  // 2^63 is too (the upper test is strict).
  double t = std::trunc(v);
  return t >= double(std::numeric_limits<T>::min()) &&
         t < double(std::numeric_limits<T>::max()) + 1;
}

template <class T>
bool int_fits(int64_t v) {
  return v >= int64_t(std::numeric_limits<T>::min()) &&
         (sizeof(T) == 8 || v <= int64_t(std::numeric_limits<T>::max()));
}

}  // namespace

bool Scalar::fits(DType d) const {
  if (d == DType::Bool || ember::is_complex(d)) return true;
  // A complex value fits a real dtype only when it is real (item<float>() of 1+2j is refused).
  if (kind_ == Kind::Complex && im_ != 0) return false;
  if (kind_ != Kind::Float && kind_ != Kind::Complex) {
    switch (d) {
      case DType::U8:
        return int_fits<uint8_t>(i_);
      case DType::I8:
        return int_fits<int8_t>(i_);
      case DType::I16:
        return int_fits<int16_t>(i_);
      case DType::I32:
        return int_fits<int32_t>(i_);
      case DType::F16:
        return std::abs(double(i_)) < 65520.0;  // rounds to inf from 65520 on
      default:
        return true;  // int64, f32, f64, bf16 (whose range exceeds int64's)
    }
  }
  if (std::isnan(d_) || std::isinf(d_)) return ember::is_floating(d);
  switch (d) {
    case DType::U8:
      return int_fits<uint8_t>(d_);
    case DType::I8:
      return int_fits<int8_t>(d_);
    case DType::I16:
      return int_fits<int16_t>(d_);
    case DType::I32:
      return int_fits<int32_t>(d_);
    case DType::I64:
      return int_fits<int64_t>(d_);
    case DType::F16:
      return std::isfinite(float(Half(float(d_))));
    case DType::BF16:
      return std::isfinite(float(BFloat16(float(d_))));
    case DType::F32:
      return std::abs(d_) <= double(std::numeric_limits<float>::max());
    default:
      return true;
  }
}

}  // namespace ember

#pragma once
// Element types and PyTorch's type promotion.
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>

#include "ember/half.h"

namespace ember {

// X(enum name, C++ type, printed name)
#define EMBER_DTYPES(X)     \
  X(Bool, bool, "bool")     \
  X(U8, uint8_t, "uint8")   \
  X(I8, int8_t, "int8")     \
  X(I16, int16_t, "int16")  \
  X(I32, int32_t, "int32")  \
  X(I64, int64_t, "int64")  \
  X(F16, Half, "float16")   \
  X(BF16, BFloat16, "bfloat16") \
  X(F32, float, "float32")  \
  X(F64, double, "float64")

enum class DType : uint8_t {
#define EMBER_X(e, t, n) e,
  EMBER_DTYPES(EMBER_X)
#undef EMBER_X
};
inline constexpr int kNumDTypes = 10;

// Short aliases in the style of torch::kFloat32.
inline constexpr DType kBool = DType::Bool, kU8 = DType::U8, kI8 = DType::I8, kI16 = DType::I16,
                       kI32 = DType::I32, kI64 = DType::I64, kF16 = DType::F16,
                       kBF16 = DType::BF16, kF32 = DType::F32, kF64 = DType::F64;
// libtorch's spellings of the same dtypes (torch::kFloat32, torch::kLong, ...).
inline constexpr DType kUInt8 = kU8, kByte = kU8, kInt8 = kI8, kChar = kI8, kInt16 = kI16,
                       kShort = kI16, kInt32 = kI32, kInt = kI32, kInt64 = kI64, kLong = kI64,
                       kFloat16 = kF16, kHalf = kF16, kBFloat16 = kBF16, kFloat32 = kF32,
                       kFloat = kF32, kFloat64 = kF64, kDouble = kF64;

/// Bytes per element.
size_t itemsize(DType d);
/// "float32", "int64", ...
std::string_view dtype_name(DType d);
/// Parses a name produced by dtype_name (also accepts "f32", "i64", ...); throws ValueError.
DType dtype_from_name(std::string_view name);
std::ostream& operator<<(std::ostream& os, DType d);

inline constexpr bool is_floating(DType d) {
  return d == DType::F16 || d == DType::BF16 || d == DType::F32 || d == DType::F64;
}
inline constexpr bool is_integral(DType d, bool include_bool = false) {
  return (d >= DType::U8 && d <= DType::I64) || (include_bool && d == DType::Bool);
}
inline constexpr bool is_signed(DType d) { return d != DType::Bool && d != DType::U8; }

/// A set of dtypes: bit i set = DType(i) is in it.
using DTypeMask = uint16_t;
inline constexpr DTypeMask mask_of(DType d) { return DTypeMask(1u << unsigned(d)); }
inline constexpr DTypeMask kAllDTypes = 0x3ff;
inline constexpr DTypeMask kFloatDTypes =
    mask_of(DType::F16) | mask_of(DType::BF16) | mask_of(DType::F32) | mask_of(DType::F64);
inline constexpr DTypeMask kIntDTypes = mask_of(DType::U8) | mask_of(DType::I8) |
                                        mask_of(DType::I16) | mask_of(DType::I32) |
                                        mask_of(DType::I64);
inline constexpr DTypeMask kNumericDTypes = kFloatDTypes | kIntDTypes;

/// The dtype two tensors of these types promote to (torch.promote_types).
DType promote_types(DType a, DType b);

/// Maps a C++ element type to its DType.
template <class T> struct dtype_of;
#define EMBER_X(e, t, n) \
  template <> struct dtype_of<t> { static constexpr DType value = DType::e; };
EMBER_DTYPES(EMBER_X)
#undef EMBER_X
template <class T> inline constexpr DType dtype_v = dtype_of<T>::value;

/// The default floating dtype (f32 unless changed), used by creation ops and int->float ops.
DType default_dtype();
void set_default_dtype(DType d);

}  // namespace ember

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
// Complex dtypes (interleaved real and imaginary parts, like std::complex<float/double>). They
// are kept out of EMBER_DTYPES so that generic per-dtype code instantiates only the real types;
// ops reach them through ember/ops/complex.cpp (docs/tensors.md, "Complex numbers").
#define EMBER_COMPLEX_DTYPES(X) \
  X(C64, "complex64")            \
  X(C128, "complex128")

enum class DType : uint8_t {
#define EMBER_X(e, t, n) e,
  EMBER_DTYPES(EMBER_X)
#undef EMBER_X
  C64, C128
};
inline constexpr int kNumDTypes = 12;

// Short aliases in the style of torch::kFloat32.
inline constexpr DType kBool = DType::Bool, kU8 = DType::U8, kI8 = DType::I8, kI16 = DType::I16,
                       kI32 = DType::I32, kI64 = DType::I64, kF16 = DType::F16,
                       kBF16 = DType::BF16, kF32 = DType::F32, kF64 = DType::F64;
// libtorch's spellings of the same dtypes (torch::kFloat32, torch::kLong, ...).
inline constexpr DType kUInt8 = kU8, kByte = kU8, kInt8 = kI8, kChar = kI8, kInt16 = kI16,
                       kShort = kI16, kInt32 = kI32, kInt = kI32, kInt64 = kI64, kLong = kI64,
                       kFloat16 = kF16, kHalf = kF16, kBFloat16 = kBF16, kFloat32 = kF32,
                       kFloat = kF32, kFloat64 = kF64, kDouble = kF64;
inline constexpr DType kC64 = DType::C64, kC128 = DType::C128, kComplexFloat = kC64,
                       kComplexDouble = kC128, kComplex64 = kC64, kComplex128 = kC128,
                       kCFloat = kC64, kCDouble = kC128;

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
inline constexpr bool is_complex(DType d) { return d == DType::C64 || d == DType::C128; }
/// Floating or complex: the dtypes that carry gradients.
inline constexpr bool is_differentiable(DType d) { return is_floating(d) || is_complex(d); }
/// The real dtype of a complex one's parts (c64 -> f32, c128 -> f64); other dtypes map to
/// themselves.
inline constexpr DType complex_part_dtype(DType d) {
  return d == DType::C64 ? DType::F32 : d == DType::C128 ? DType::F64 : d;
}
/// The complex dtype holding parts of floating dtype `d` (f64 -> c128, other floats -> c64).
inline constexpr DType complex_dtype_for(DType d) {
  return d == DType::F64 || d == DType::C128 ? DType::C128 : DType::C64;
}

/// A set of dtypes: bit i set = DType(i) is in it.
using DTypeMask = uint16_t;
inline constexpr DTypeMask mask_of(DType d) { return DTypeMask(1u << unsigned(d)); }
/// Every real dtype (kernels registered with it refuse complex input by name).
inline constexpr DTypeMask kAllDTypes = 0x3ff;
inline constexpr DTypeMask kComplexDTypes = mask_of(DType::C64) | mask_of(DType::C128);
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

#include "ember/dtype.h"

#include <ostream>
#include <string>

#include "ember/error.h"

namespace ember {

size_t itemsize(DType d) {
  switch (d) {
#define EMBER_X(e, t, n) case DType::e: return sizeof(t);
    EMBER_DTYPES(EMBER_X)
#undef EMBER_X
    case DType::C64: return 8;
    case DType::C128: return 16;
  }
  return 0;
}

std::string_view dtype_name(DType d) {
  switch (d) {
#define EMBER_X(e, t, n) case DType::e: return n;
#define EMBER_X_C(e, n) case DType::e: return n;
    EMBER_DTYPES(EMBER_X)
    EMBER_COMPLEX_DTYPES(EMBER_X_C)
#undef EMBER_X
#undef EMBER_X_C
  }
  return "?";
}

DType dtype_from_name(std::string_view name) {
#define EMBER_X(e, t, n) if (name == n) return DType::e;
#define EMBER_X_C(e, n) if (name == n) return DType::e;
  EMBER_DTYPES(EMBER_X)
  EMBER_COMPLEX_DTYPES(EMBER_X_C)
#undef EMBER_X
#undef EMBER_X_C
  static const std::pair<std::string_view, DType> shorts[] = {
      {"bool", kBool}, {"u8", kU8}, {"i8", kI8}, {"i16", kI16}, {"i32", kI32}, {"i64", kI64},
      {"f16", kF16}, {"bf16", kBF16}, {"f32", kF32}, {"f64", kF64}, {"half", kF16},
      {"float", kF32}, {"double", kF64}, {"long", kI64}, {"int", kI32},
      {"c64", kC64}, {"c128", kC128}, {"cfloat", kC64}, {"cdouble", kC128}};
  for (auto& [s, d] : shorts)
    if (name == s) return d;
  detail::throw_value("dtype", "unknown dtype name '" + std::string(name) + "'");
}

std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // Complex wins over every real dtype; its parts are at least as wide as the real operand
  // (torch: complex64 with float64 gives complex128; f16/bf16 give complex64, ember has no
  // complex32).
  if (is_complex(a) || is_complex(b)) {
    auto part = [](DType d) { return is_complex(d) ? complex_part_dtype(d) : d; };
    DType p = promote_types(part(a), part(b));
    return p == DType::F64 ? DType::C128 : DType::C64;
  }
  // torch's promotion lattice, rows/cols in enum order: b1 u1 i1 i2 i4 i8 f2 bf f4 f8
  constexpr DType b1 = kBool, u1 = kU8, i1 = kI8, i2 = kI16, i4 = kI32, i8 = kI64, f2 = kF16,
                  bf = kBF16, f4 = kF32, f8 = kF64;
  static constexpr DType table[10][10] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[int(a)][int(b)];
}

namespace {
DType g_default_dtype = DType::F32;
}
DType default_dtype() { return g_default_dtype; }
void set_default_dtype(DType d) {
  if (!is_floating(d))  // torch also refuses complex here
    detail::throw_dtype("set_default_dtype",
                        "expected a floating dtype, found " + std::string(dtype_name(d)));
  g_default_dtype = d;
}

}  // namespace ember

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
  }
  return 0;
}

std::string_view dtype_name(DType d) {
  switch (d) {
#define EMBER_X(e, t, n) case DType::e: return n;
    EMBER_DTYPES(EMBER_X)
#undef EMBER_X
  }
  return "?";
}

DType dtype_from_name(std::string_view name) {
#define EMBER_X(e, t, n) if (name == n) return DType::e;
  EMBER_DTYPES(EMBER_X)
#undef EMBER_X
  static const std::pair<std::string_view, DType> shorts[] = {
      {"bool", kBool}, {"u8", kU8}, {"i8", kI8}, {"i16", kI16}, {"i32", kI32}, {"i64", kI64},
      {"f16", kF16}, {"bf16", kBF16}, {"f32", kF32}, {"f64", kF64}, {"half", kF16},
      {"float", kF32}, {"double", kF64}, {"long", kI64}, {"int", kI32}};
  for (auto& [s, d] : shorts)
    if (name == s) return d;
  detail::throw_value("dtype", "unknown dtype name '" + std::string(name) + "'");
}

std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
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
  if (!is_floating(d))
    detail::throw_dtype("set_default_dtype",
                        "expected a floating dtype, found " + std::string(dtype_name(d)));
  g_default_dtype = d;
}

}  // namespace ember

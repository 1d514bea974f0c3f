#pragma once
// The one table of elementwise ops: for every Unary, Binary and Ternary registry op (and cast),
// its scalar definition as a generic function, usable with T = float/double/integer types/bool
// (eager loops: the operands already converted to the compute type, as flex's loops do) and
// T = kl::Expr (IR; kl::pointwise traces any op by OpId). The definitions branch on the kind of
// T with by_kind: at compile time for built-in types, while tracing for Expr.
//
// Integer arithmetic wraps (two's complement, PyTorch's behaviour) and is UB-free: it goes
// through unsigned arithmetic (kl/wrap.h, shared with flex's kernels). Defined results where C++ has none (the IR's, see ir.h):
//   a / 0 == 0, a % 0 == a, INT_MIN / -1 == INT_MIN, INT_MIN % -1 == 0, floor and trunc
//   division alike; shifts by a count outside [0, bits) give 0 (left) or the sign fill (right).
// (flex's eager kernels reject a zero integer divisor before they run.)
#include <cstdint>
#include <type_traits>

#include "ember/detail/convert.h"
#include "ember/kl/expr.h"
#include "ember/kl/wrap.h"
#include "ember/ops/registry.h"

namespace ember::kl {

template <class T> inline constexpr bool is_expr_v = std::is_same_v<T, Expr>;

/// float_fn(args...) for float values, int_fn for integers, bool_fn for bool: chosen at compile
/// time for built-in types and from the dtype while tracing for Expr.
template <class F, class I, class B, class T, class... R>
auto by_kind(F&& float_fn, I&& int_fn, B&& bool_fn, const T& x, const R&... rest) {
  if constexpr (is_expr_v<T>) {
    if (is_floating(x.dtype())) return float_fn(x, rest...);
    if (x.dtype() == DType::Bool) return bool_fn(x, rest...);
    return int_fn(x, rest...);
  } else if constexpr (std::is_floating_point_v<T>) {
    return float_fn(x, rest...);
  } else if constexpr (std::is_same_v<T, bool>) {
    return bool_fn(x, rest...);
  } else {
    return int_fn(x, rest...);
  }
}

/// Whether x's type is a signed integer type (trace-time for Expr).
template <class T> bool signed_int(const T& x) {
  if constexpr (is_expr_v<T>) return is_integral(x.dtype()) && is_signed(x.dtype());
  else return std::is_integral_v<T> && std::is_signed_v<T>;
}
/// Bits of x's integer type.
template <class T> int int_bits(const T& x) {
  if constexpr (is_expr_v<T>) return int(itemsize(x.dtype()) * 8);
  else return int(sizeof(T) * 8);
}
/// b (a bool) converted to the type of `like`.
template <class T, class B> T convert_like(const B& b, const T& like) {
  if constexpr (is_expr_v<T>) return cast(b, like.dtype());
  else return T(b);
}

// --- UB-free wrapping integer arithmetic: kl/wrap.h for built-in types; the IR's operations
// already wrap for Expr ---
template <class T> T wrap_add(T a, T b) {
  if constexpr (is_expr_v<T>) return a + b;
  else return wrapping_add(a, b);
}
template <class T> T wrap_sub(T a, T b) {
  if constexpr (is_expr_v<T>) return a - b;
  else return wrapping_sub(a, b);
}
template <class T> T wrap_mul(T a, T b) {
  if constexpr (is_expr_v<T>) return a * b;
  else return wrapping_mul(a, b);
}
template <class T> T wrap_neg(T a) {
  if constexpr (is_expr_v<T>) return -a;
  else return wrapping_neg(a);
}
/// Truncating division with the defined zero-divisor and INT_MIN / -1 results.
template <class T> T int_div_trunc(T a, T b) {
  if constexpr (is_expr_v<T>) {
    return a / b;
  } else {
    if (b == T(0)) return T(0);
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return wrap_neg(a);
    return T(a / b);
  }
}
/// C's % (sign of the dividend) with a % 0 == a and a % -1 == 0.
template <class T> T int_rem(T a, T b) {
  if constexpr (is_expr_v<T>) {
    return a % b;
  } else {
    if (b == T(0)) return a;
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return T(0);
    return T(a % b);
  }
}
/// Python's floor division.
template <class T> T int_div_floor(T a, T b) {
  T q = int_div_trunc(a, b);
  if constexpr (std::is_unsigned_v<T>) {
    return q;
  } else {
    if (!signed_int(a)) return q;
    T r = int_rem(a, b);
    return select(b != T(0) && r != T(0) && ((r < T(0)) != (b < T(0))), wrap_sub(q, T(1)), q);
  }
}
/// Python's modulo: the sign of the divisor.
template <class T> T int_mod_floor(T a, T b) {
  T r = int_rem(a, b);
  if constexpr (std::is_unsigned_v<T>) {
    return r;
  } else {
    if (!signed_int(a)) return r;
    return select(r != T(0) && ((r < T(0)) != (b < T(0))), wrap_add(r, b), r);
  }
}
/// Integer power by squaring, wrapping; negative exponents: 1 for a == 1, +-1 for a == -1, else 0.
template <class T> T int_pow(T a, T b) {
  if constexpr (!is_expr_v<T>) {
    if constexpr (std::is_signed_v<T>)
      if (b < 0) return T(a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0);
    using U = detail::wide_unsigned_t<T>;
    U r = 1, base = U(a);
    for (auto e = b; e > 0; e >>= 1) {
      if (e & 1) r = U(r * base);
      base = U(base * base);
    }
    return T(std::make_unsigned_t<T>(r));
  } else {
    // Branch-free: every bit of the exponent, the same wrapping products as the loop above.
    T r = lit(a, 1), base = a, e = b;
    for (int i = 0, n = int_bits(a) - (signed_int(a) ? 1 : 0); i < n; ++i) {
      r = select((e & T(1)) != T(0), r * base, r);
      base = base * base;
      e = e >> T(1);
    }
    if (!signed_int(a)) return r;
    T neg = select(a == T(1), lit(a, 1),
                   select(a == T(-1), select((b & T(1)) != T(0), lit(a, -1), lit(a, 1)), lit(a, 0)));
    return select(b < T(0), neg, r);
  }
}
template <class T> T int_shl(T a, T b) {
  if constexpr (is_expr_v<T>) {
    return a << b;
  } else {
    using U = std::make_unsigned_t<T>;
    constexpr int bits = int(sizeof(T) * 8);
    return (b < 0 || b >= bits) ? T(0) : T(U(U(a) << b));
  }
}
template <class T> T int_shr(T a, T b) {
  if constexpr (is_expr_v<T>) {
    return a >> b;
  } else {
    constexpr int bits = int(sizeof(T) * 8);
    if (b < 0 || b >= bits) return T(a < 0 ? -1 : 0);
    return T(a >> b);
  }
}

/// Conversion with the IR's defined results (float -> integer by ember/detail/convert.h,
/// torch's x86 results); other conversions are C++'s. For flex's cast loops.
template <class To, class From> To convert(From x) {
  if constexpr (std::is_same_v<To, bool>) return x != From(0);
  else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) return ember::detail::float_to_int<To>(x);
  else return To(x);
}

}  // namespace ember::kl

#include "ember/kl/elementwise_ops.h"

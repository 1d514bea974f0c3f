// flex kernels: broadcasting binary and ternary ops.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ember/backends/flex/elementwise.h"
#include "ember/kl/scalar.h"
#include "ember/kl/wrap.h"
#include "ember/ops/binary.h"
#include "ember/ops/layout.h"
#include "ember/ops/modes.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember::flex {
namespace {

enum class Set { All, Numeric, Float, Int, IntBool };

Tensor as_compute(const Tensor& t, DType d) { return t.dtype() == d ? t : cast(t, d); }

template <Set S, bool BoolOut, class F>
TensorList binary_run(const OpCall& c, const F& f) {
  Tensor out = new_output(c);
  DType cd = c.meta.compute;
  Tensor ins[] = {as_compute(c.inputs[0], cd), as_compute(c.inputs[1], cd)};
  const char* name = op_name(c.op);
#define EMBER_RUN_ run_map(out, ins, map2_loop<T, std::conditional_t<BoolOut, bool, T>, F>, f)
  if constexpr (S == Set::All) { EMBER_DISPATCH_ALL(cd, name, EMBER_RUN_); }
  else if constexpr (S == Set::Numeric) { EMBER_DISPATCH_NUMERIC(cd, name, EMBER_RUN_); }
  else if constexpr (S == Set::Float) { EMBER_DISPATCH_FLOAT(cd, name, EMBER_RUN_); }
  else if constexpr (S == Set::Int) { EMBER_DISPATCH_INT(cd, name, EMBER_RUN_); }
  else { EMBER_DISPATCH_INT_BOOL(cd, name, EMBER_RUN_); }
#undef EMBER_RUN_
  return {out};
}

// Integer division and remainder trap on a zero divisor: check before running.
void check_int_divisor(const OpCall& c) {
  if (is_floating(c.meta.compute)) return;
  if (c.inputs[1].numel() && any(eq(c.inputs[1], 0)).item<bool>())
    detail::throw_value(op_name(c.op), "integer division by zero");
}

// Integers wrap like torch's: INT_MIN / -1 is INT_MIN (the trap avoided), INT_MIN % -1 is 0.
// A zero divisor never reaches these (check_int_divisor throws first).
template <class C> C int_div_trunc(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return kl::wrapping_neg(a);
  }
  return C(a / b);
}
template <class C> C int_div_floor(C a, C b) {
  C q = int_div_trunc(a, b);
  if constexpr (std::is_signed_v<C>) {
    if (b != C(-1) && (a % b != 0) && ((a < 0) != (b < 0))) q = C(q - 1);
  }
  return q;
}
template <class C> C int_mod(C a, C b) {  // C's %, sign of the dividend
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return C(0);
  }
  return C(a % b);
}

TensorList k_add(const OpCall& c) {
  return binary_run<Set::All, false>(c, [](auto a, auto b) {
    if constexpr (std::is_same_v<decltype(a), bool>) return bool(a || b);
    else return kl::wrapping_add(a, b);
  });
}
TensorList k_sub(const OpCall& c) {
  return binary_run<Set::Numeric, false>(c, [](auto a, auto b) { return kl::wrapping_sub(a, b); });
}
TensorList k_mul(const OpCall& c) {
  return binary_run<Set::All, false>(c, [](auto a, auto b) {
    if constexpr (std::is_same_v<decltype(a), bool>) return bool(a && b);
    else return kl::wrapping_mul(a, b);
  });
}
TensorList k_div(const OpCall& c) {
  const auto m = ops::RoundingMode(c.attrs.mode);
  if (m == ops::RoundingMode::True)
    return binary_run<Set::Float, false>(c, [](auto a, auto b) { return a / b; });
  check_int_divisor(c);
  if (m == ops::RoundingMode::Trunc)
    return binary_run<Set::Numeric, false>(c, [](auto a, auto b) {
      using C = decltype(a);
      if constexpr (std::is_floating_point_v<C>) return kl::trunc(a / b);
      else return int_div_trunc(a, b);
    });
  return binary_run<Set::Numeric, false>(c, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_floating_point_v<C>) {
      // Python's floor division: floor of the exact quotient, via fmod like torch.
      C mod = kl::fmod(a, b);
      C div = (a - mod) / b;
      div = kl::select(mod != C(0) && ((b < C(0)) != (mod < C(0))), div - C(1), div);
      C fl = kl::floor(div);
      fl = kl::select(div - fl > C(0.5), fl + C(1), fl);
      return kl::select(b == C(0), a / b, kl::select(div == C(0), C(std::copysign(C(0), a / b)), fl));
    } else {
      return int_div_floor(a, b);
    }
  });
}
TensorList k_remainder(const OpCall& c) {
  check_int_divisor(c);
  return binary_run<Set::Numeric, false>(c, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_floating_point_v<C>) {
      C r = kl::fmod(a, b);
      return kl::select(r != C(0) && ((r < C(0)) != (b < C(0))), r + b, r);
    } else {
      C r = int_mod(a, b);
      if constexpr (std::is_signed_v<C>)
        if (r != 0 && ((r < 0) != (b < 0))) r = kl::wrapping_add(r, b);
      return r;
    }
  });
}
TensorList k_fmod(const OpCall& c) {
  check_int_divisor(c);
  return binary_run<Set::Numeric, false>(c, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_floating_point_v<C>) return kl::fmod(a, b);
    else return int_mod(a, b);
  });
}
TensorList k_pow(const OpCall& c) {
  return binary_run<Set::Numeric, false>(c, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_floating_point_v<C>) {
      return kl::pow(a, b);
    } else {
      if constexpr (std::is_signed_v<C>) {
        if (b < 0) return C(a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0);
      }
      C r = 1, base = a;  // wraps on overflow like torch's, without UB
      for (auto e = b; e > 0; e >>= 1) {
        if (e & 1) r = kl::wrapping_mul(r, base);
        base = kl::wrapping_mul(base, base);
      }
      return r;
    }
  });
}
TensorList k_atan2(const OpCall& c) {
  return binary_run<Set::Float, false>(c, [](auto a, auto b) { return kl::atan2(a, b); });
}
TensorList k_maximum(const OpCall& c) {
  return binary_run<Set::All, false>(c, [](auto a, auto b) { return kl::maximum(a, b); });
}
TensorList k_minimum(const OpCall& c) {
  return binary_run<Set::All, false>(c, [](auto a, auto b) { return kl::minimum(a, b); });
}
#define EMBER_CMP(name, expr) \
  TensorList k_##name(const OpCall& c) { \
    return binary_run<Set::All, true>(c, [](auto a, auto b) { return bool(expr); }); \
  }
EMBER_CMP(eq, a == b) EMBER_CMP(ne, a != b) EMBER_CMP(lt, a < b) EMBER_CMP(le, a <= b)
EMBER_CMP(gt, a > b) EMBER_CMP(ge, a >= b)
#undef EMBER_CMP
TensorList k_logical_and(const OpCall& c) {
  return binary_run<Set::IntBool, false>(c, [](auto a, auto b) { return bool(a && b); });
}
TensorList k_logical_or(const OpCall& c) {
  return binary_run<Set::IntBool, false>(c, [](auto a, auto b) { return bool(a || b); });
}
TensorList k_logical_xor(const OpCall& c) {
  return binary_run<Set::IntBool, false>(c, [](auto a, auto b) { return bool(bool(a) != bool(b)); });
}
TensorList k_bitwise_and(const OpCall& c) {
  return binary_run<Set::IntBool, false>(c, [](auto a, auto b) { return decltype(a)(a & b); });
}
TensorList k_bitwise_or(const OpCall& c) {
  return binary_run<Set::IntBool, false>(c, [](auto a, auto b) { return decltype(a)(a | b); });
}
TensorList k_bitwise_xor(const OpCall& c) {
  return binary_run<Set::IntBool, false>(c, [](auto a, auto b) { return decltype(a)(a ^ b); });
}
TensorList k_bitwise_left_shift(const OpCall& c) {
  return binary_run<Set::Int, false>(c, [](auto a, auto b) {
    using C = decltype(a);
    using U = std::make_unsigned_t<C>;
    constexpr int bits = int(sizeof(C) * 8);
    return (b < 0 || b >= bits) ? C(0) : C(U(a) << b);
  });
}
TensorList k_bitwise_right_shift(const OpCall& c) {
  return binary_run<Set::Int, false>(c, [](auto a, auto b) {
    using C = decltype(a);
    constexpr int bits = int(sizeof(C) * 8);
    if (b < 0 || b >= bits) return C(a < 0 ? -1 : 0);
    return C(a >> b);
  });
}

// --- ternary ---
template <class F>
Tensor ternary_run(const OpCall& c, std::span<const Tensor> ins, const Tensor& out, const F& f) {
  EMBER_DISPATCH_ALL(out.dtype(), op_name(c.op), run_map(out, ins, map3_loop<T, F>, f));
  return out;
}

// out = cond ? a : b, selected through bit masks: a data-dependent branch mispredicts on masks
// like relu's backward (half true, at random), which made where ~30x slower than a multiply, and
// GCC turns a plain ?: on two loaded values back into that branch. The mask form vectorises for
// contiguous operands (a or b possibly a broadcast scalar).
template <class T>
struct Bits {
  using U = std::conditional_t<sizeof(T) == 1, uint8_t,
            std::conditional_t<sizeof(T) == 2, uint16_t,
            std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  static U of(T v) {
    U u;
    std::memcpy(&u, static_cast<const void*>(&v), sizeof(T));
    return u;
  }
  static T select(bool c, U x, U y) {
    const U mask = U(U(0) - U(c));
    const U r = U((x & mask) | (y & U(~mask)));
    T v;
    std::memcpy(static_cast<void*>(&v), &r, sizeof(T));  // T: a number or a 16-bit float struct
    return v;
  }
};

template <class T>
void where_loop(char** p, const int64_t* s, int64_t n, const void*) {
  using B = Bits<T>;
  T* __restrict o = reinterpret_cast<T*>(p[0]);
  const uint8_t* __restrict m = reinterpret_cast<const uint8_t*>(p[1]);  // bools are 0 or 1
  const T* __restrict a = reinterpret_cast<const T*>(p[2]);
  const T* __restrict b = reinterpret_cast<const T*>(p[3]);
  constexpr int64_t z = sizeof(T);
  if (s[0] == z && s[1] == 1) {
    if (s[2] == z && s[3] == z) {
      for (int64_t i = 0; i < n; ++i) o[i] = B::select(m[i], B::of(a[i]), B::of(b[i]));
      return;
    }
    if (s[2] == 0 && s[3] == z) {
      const auto av = B::of(a[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = B::select(m[i], av, B::of(b[i]));
      return;
    }
    if (s[2] == z && s[3] == 0) {
      const auto bv = B::of(b[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = B::select(m[i], B::of(a[i]), bv);
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<T*>(p[0] + i * s[0]) =
        B::select(*reinterpret_cast<const uint8_t*>(p[1] + i * s[1]),
                  B::of(*reinterpret_cast<const T*>(p[2] + i * s[2])),
                  B::of(*reinterpret_cast<const T*>(p[3] + i * s[3])));
}

TensorList k_where(const OpCall& c) {
  Tensor out = new_output(c);
  DType cd = c.meta.compute;
  Tensor a = as_compute(c.inputs[1], cd), b = as_compute(c.inputs[2], cd);
  Tensor ins[] = {c.inputs[0], a, b};
  EMBER_DISPATCH_ALL(cd, "where", run_map(out, ins, where_loop<T>, 0));
  return {out};
}

TensorList k_clamp(const OpCall& c) {
  DType cd = c.meta.compute;
  Tensor r = as_compute(c.inputs[0], cd);
  if (c.inputs[1].defined()) r = maximum(r, as_compute(c.inputs[1], cd));
  if (c.inputs[2].defined()) r = minimum(r, as_compute(c.inputs[2], cd));
  // torch's clamp with lo > hi yields hi everywhere, which the order above reproduces.
  return {r.shape() == c.meta.m[0].shape ? r : expand(r, c.meta.m[0].shape).contiguous()};
}

TensorList k_lerp(const OpCall& c) {
  Tensor out = new_output(c);
  DType cd = c.meta.compute;
  Tensor ins[] = {as_compute(c.inputs[0], cd), as_compute(c.inputs[1], cd), as_compute(c.inputs[2], cd)};
  return {ternary_run(c, ins, out, [](auto a, auto b, auto w) {
    using C = decltype(a);
    if constexpr (std::is_floating_point_v<C>) {
      // torch's two-sided form keeps lerp exact at both ends.
      return kl::select(kl::fabs(w) < C(0.5), a + w * (b - a), b - (b - a) * (C(1) - w));
    } else {
      return a;
    }
  })};
}

template <bool Div>
TensorList addc(const OpCall& c) {
  Tensor out = new_output(c);
  DType cd = c.meta.compute;
  Tensor ins[] = {as_compute(c.inputs[0], cd), as_compute(c.inputs[1], cd), as_compute(c.inputs[2], cd)};
  Scalar v = c.attrs.s[0];
  return {ternary_run(c, ins, out, [v](auto x, auto a, auto b) {
    using C = decltype(x);
    if constexpr (std::is_same_v<C, bool>) return bool(x || (v.to_bool() && a && b));
    else if constexpr (Div) return C(x + v.to<C>() * (a / b));  // floating only (inference)
    else return kl::wrapping_add(x, kl::wrapping_mul(kl::wrapping_mul(v.to<C>(), a), b));
  })};
}

}  // namespace

void register_flex_binary(BackendImpl& b) {
#define EMBER_REG(name) b.set_kernel(OpId::name, k_##name, kAllDTypes);
  EMBER_REG(add) EMBER_REG(sub) EMBER_REG(mul) EMBER_REG(div) EMBER_REG(remainder)
  EMBER_REG(fmod) EMBER_REG(pow) EMBER_REG(atan2) EMBER_REG(maximum) EMBER_REG(minimum)
  EMBER_REG(eq) EMBER_REG(ne) EMBER_REG(lt) EMBER_REG(le) EMBER_REG(gt) EMBER_REG(ge)
  EMBER_REG(logical_and) EMBER_REG(logical_or) EMBER_REG(logical_xor) EMBER_REG(bitwise_and)
  EMBER_REG(bitwise_or) EMBER_REG(bitwise_xor) EMBER_REG(bitwise_left_shift)
  EMBER_REG(bitwise_right_shift) EMBER_REG(where) EMBER_REG(clamp) EMBER_REG(lerp)
#undef EMBER_REG
  b.set_kernel(OpId::addcmul, addc<false>, kAllDTypes);
  b.set_kernel(OpId::addcdiv, addc<true>, kAllDTypes);
}

}  // namespace ember::flex

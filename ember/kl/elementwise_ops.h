#pragma once
// Per-op definitions of the elementwise table (included by kl/elementwise.h). Def<OpId::x>::f
// takes the operands already converted to the op's evaluation type (the compute dtype, with
// f16/bf16 evaluated in f32), and the op's scalar attributes as values of that type, in the
// order kl::op_scalars lists them. Each family also has a list macro, so a backend can stamp
// out its kernels from it (X(name, ...)).
#include "ember/kl/elementwise.h"

namespace ember::kl::ew {

template <OpId op> struct Def;  // only elementwise ops have one

// --- unary float maths, no attributes: X(op, expression of x) ---
#define EMBER_KL_UNARY_FLOAT(X)                                                               \
  X(exp, exp(x)) X(exp2, exp2(x)) X(expm1, expm1(x)) X(log, log(x)) X(log2, log2(x))           \
  X(log10, log10(x)) X(log1p, log1p(x)) X(sqrt, sqrt(x)) X(rsqrt, rsqrt(x))                    \
  X(reciprocal, T(1) / x) X(sin, sin(x)) X(cos, cos(x)) X(tan, tan(x)) X(asin, asin(x))        \
  X(acos, acos(x)) X(atan, atan(x)) X(sinh, sinh(x)) X(cosh, cosh(x)) X(tanh, tanh(x))         \
  X(asinh, asinh(x)) X(acosh, acosh(x)) X(atanh, atanh(x)) X(erf, erf(x))                      \
  X(erfinv, erfinv(x)) X(sigmoid, sigmoid(x)) X(silu, silu(x)) X(mish, mish(x))                \
  X(hardswish, hardswish(x)) X(hardsigmoid, hardsigmoid(x))
#define EMBER_X(name, expr) \
  template <> struct Def<OpId::name> { template <class T> static T f(T x) { return expr; } };
EMBER_KL_UNARY_FLOAT(EMBER_X)
#undef EMBER_X

/// gelu: f is the erf form, f_tanh the tanh approximation (Attrs::mode == ops::GeluApprox::Tanh).
template <> struct Def<OpId::gelu> {
  template <class T> static T f(T x) { return gelu(x); }
  template <class T> static T f_tanh(T x) { return gelu_tanh(x); }
};
template <> struct Def<OpId::softplus> {
  template <class T> static T f(T x, T beta, T threshold) { return softplus(x, beta, threshold); }
};
template <> struct Def<OpId::elu> {
  template <class T> static T f(T x, T alpha) { return elu(x, alpha); }
};

// --- unary ops in the input's own dtype ---
template <> struct Def<OpId::neg> {
  template <class T> static T f(T x) {
    return by_kind([](auto v) { return -v; }, [](auto v) { return wrap_neg(v); },
                   [](auto v) { return v; }, x);
  }
};
/// select(x < 0, -x, x), like flex (so -0.0 stays -0.0); INT_MIN stays INT_MIN.
template <> struct Def<OpId::abs> {
  template <class T> static T f(T x) {
    if constexpr (std::is_unsigned_v<T>) return x;
    else return select(x < T(0), Def<OpId::neg>::f(x), x);
  }
};
template <> struct Def<OpId::sign> {
  template <class T> static T f(T x) {
    return by_kind([](auto v) { return sign(v); },
                   [](auto v) {
                     using V = decltype(v);
                     return wrap_sub(convert_like(v > V(0), v), convert_like(v < V(0), v));
                   },
                   [](auto v) { return v; }, x);
  }
};
template <> struct Def<OpId::square> {
  template <class T> static T f(T x) {
    return by_kind([](auto v) { return v * v; }, [](auto v) { return wrap_mul(v, v); },
                   [](auto v) { return v; }, x);
  }
};
template <> struct Def<OpId::relu> {  // NaN stays NaN
  template <class T> static T f(T x) { return select(x < T(0), T(0), x); }
};
template <> struct Def<OpId::leaky_relu> {  // integers: x * slope with the slope truncated
  template <class T> static T f(T x, T slope) {
    return by_kind([](auto v, auto s) { return select(v > decltype(v)(0), v, v * s); },
                   [](auto v, auto s) { return select(v > decltype(v)(0), v, wrap_mul(v, s)); },
                   [](auto v, auto) { return v; }, x, slope);
  }
};
#define EMBER_KL_ROUNDING(X) X(floor, floor) X(ceil, ceil) X(round, round_even) X(trunc, trunc)
#define EMBER_X(name, fn)                                                                  \
  template <> struct Def<OpId::name> { /* integers and bool: unchanged */                 \
    template <class T> static T f(T x) {                                                   \
      return by_kind([](auto v) { return fn(v); }, [](auto v) { return v; },               \
                     [](auto v) { return v; }, x);                                         \
    }                                                                                      \
  };
EMBER_KL_ROUNDING(EMBER_X)
#undef EMBER_X
/// The scalars are the replacements for NaN, +inf and -inf (op_scalars resolves the defaults).
template <> struct Def<OpId::nan_to_num> {
  template <class T> static T f(T x, T nan, T posinf, T neginf) {
    return by_kind(
        [](auto v, auto n, auto p, auto m) {
          return select(isnan(v), n, select(isinf(v), select(v > decltype(v)(0), p, m), v));
        },
        [](auto v, auto, auto, auto) { return v; }, [](auto v, auto, auto, auto) { return v; },
        x, nan, posinf, neginf);
  }
};
template <> struct Def<OpId::bitwise_not> {
  template <class T> static T f(T x) {
    return by_kind([](auto v) { return v; }, [](auto v) { return decltype(v)(~v); },
                   [](auto v) { return !v; }, x);
  }
};

// --- predicates: bool out, evaluated in the input's dtype ---
template <> struct Def<OpId::isnan> {
  template <class T> static auto f(T x) {
    if constexpr (is_expr_v<T> || std::is_floating_point_v<T>) return isnan(x);
    else return false;
  }
};
template <> struct Def<OpId::isinf> {
  template <class T> static auto f(T x) {
    if constexpr (is_expr_v<T> || std::is_floating_point_v<T>) return isinf(x);
    else return false;
  }
};
template <> struct Def<OpId::isfinite> {
  template <class T> static auto f(T x) {
    if constexpr (is_expr_v<T>) {
      if (is_floating(x.dtype())) return !isinf(x) && !isnan(x);
      return x.builder()->constant_int({DType::Bool, x.type().lanes}, 1);
    } else if constexpr (std::is_floating_point_v<T>) {
      return !isinf(x) && !isnan(x);
    } else {
      return true;
    }
  }
};
template <> struct Def<OpId::logical_not> {
  template <class T> static auto f(T x) { return x == T(0); }
};

// --- binary ---
template <> struct Def<OpId::add> {
  template <class T> static T f(T a, T b) {
    return by_kind([](auto x, auto y) { return x + y; }, [](auto x, auto y) { return wrap_add(x, y); },
                   [](auto x, auto y) { return x || y; }, a, b);
  }
};
template <> struct Def<OpId::sub> {
  template <class T> static T f(T a, T b) {
    return by_kind([](auto x, auto y) { return x - y; }, [](auto x, auto y) { return wrap_sub(x, y); },
                   [](auto x, auto y) { return x != y; }, a, b);
  }
};
template <> struct Def<OpId::mul> {
  template <class T> static T f(T a, T b) {
    return by_kind([](auto x, auto y) { return x * y; }, [](auto x, auto y) { return wrap_mul(x, y); },
                   [](auto x, auto y) { return x && y; }, a, b);
  }
};
/// f: true division (float); f_trunc and f_floor: the rounding modes (Attrs::mode, ops::RoundingMode).
template <> struct Def<OpId::div> {
  template <class T> static T f(T a, T b) { return a / b; }
  template <class T> static T f_trunc(T a, T b) {
    return by_kind([](auto x, auto y) { return trunc(x / y); },
                   [](auto x, auto y) { return int_div_trunc(x, y); },
                   [](auto x, auto) { return x; }, a, b);
  }
  template <class T> static T f_floor(T a, T b) {
    return by_kind(
        [](auto x, auto y) {
          // Python's floor division: floor of the exact quotient, via fmod like torch.
          using C = decltype(x);
          C mod = fmod(x, y);
          C div = (x - mod) / y;
          div = select(mod != C(0) && ((y < C(0)) != (mod < C(0))), div - C(1), div);
          C fl = floor(div);
          fl = select(div - fl > C(0.5), fl + C(1), fl);
          return select(y == C(0), x / y, select(div == C(0), copysign(lit(x, 0), x / y), fl));
        },
        [](auto x, auto y) { return int_div_floor(x, y); }, [](auto x, auto) { return x; }, a, b);
  }
};
template <> struct Def<OpId::remainder> {
  template <class T> static T f(T a, T b) {
    return by_kind(
        [](auto x, auto y) {
          using C = decltype(x);
          C r = fmod(x, y);
          return select(r != C(0) && ((r < C(0)) != (y < C(0))), r + y, r);
        },
        [](auto x, auto y) { return int_mod_floor(x, y); }, [](auto x, auto) { return x; }, a, b);
  }
};
template <> struct Def<OpId::fmod> {
  template <class T> static T f(T a, T b) {
    return by_kind([](auto x, auto y) { return fmod(x, y); },
                   [](auto x, auto y) { return int_rem(x, y); }, [](auto x, auto) { return x; }, a, b);
  }
};
template <> struct Def<OpId::pow> {
  template <class T> static T f(T a, T b) {
    return by_kind([](auto x, auto y) { return pow(x, y); },
                   [](auto x, auto y) { return int_pow(x, y); }, [](auto x, auto y) { return x || !y; },
                   a, b);
  }
};
template <> struct Def<OpId::atan2> {
  template <class T> static T f(T a, T b) { return atan2(a, b); }
};
template <> struct Def<OpId::maximum> {
  template <class T> static T f(T a, T b) { return maximum(a, b); }
};
template <> struct Def<OpId::minimum> {
  template <class T> static T f(T a, T b) { return minimum(a, b); }
};
// Comparisons and logical ops: X(op, expression of a and b); bool out. Logical ops see their
// operands converted to bool (their compute dtype).
#define EMBER_KL_COMPARE(X)                                                                    \
  X(eq, a == b) X(ne, a != b) X(lt, a < b) X(le, a <= b) X(gt, a > b) X(ge, a >= b)            \
  X(logical_and, a && b) X(logical_or, a || b) X(logical_xor, a != b)
#define EMBER_X(name, expr) \
  template <> struct Def<OpId::name> { template <class T> static auto f(T a, T b) { return expr; } };
EMBER_KL_COMPARE(EMBER_X)
#undef EMBER_X
#define EMBER_KL_BITWISE(X) X(bitwise_and, &) X(bitwise_or, |) X(bitwise_xor, ^)
#define EMBER_X(name, op) \
  template <> struct Def<OpId::name> { template <class T> static T f(T a, T b) { return T(a op b); } };
EMBER_KL_BITWISE(EMBER_X)
#undef EMBER_X
template <> struct Def<OpId::bitwise_left_shift> {
  template <class T> static T f(T a, T b) { return int_shl(a, b); }
};
template <> struct Def<OpId::bitwise_right_shift> {
  template <class T> static T f(T a, T b) { return int_shr(a, b); }
};

// --- ternary ---
template <> struct Def<OpId::where> {  // cond is bool, not converted
  template <class C, class T> static T f(C cond, T a, T b) { return select(cond, a, b); }
};
/// clamp: f with both bounds, f_lo/f_hi with one (NaN bounds propagate, like maximum/minimum).
template <> struct Def<OpId::clamp> {
  template <class T> static T f(T x, T lo, T hi) { return minimum(maximum(x, lo), hi); }
  template <class T> static T f_lo(T x, T lo) { return maximum(x, lo); }
  template <class T> static T f_hi(T x, T hi) { return minimum(x, hi); }
};
template <> struct Def<OpId::lerp> {  // torch's two-sided form keeps lerp exact at both ends
  template <class T> static T f(T a, T b, T w) {
    return by_kind(
        [](auto x, auto y, auto v) {
          using C = decltype(x);
          return select(fabs(v) < C(0.5), x + v * (y - x), y - (y - x) * (C(1) - v));
        },
        [](auto x, auto, auto) { return x; }, [](auto x, auto, auto) { return x; }, a, b, w);
  }
};
template <> struct Def<OpId::addcmul> {  // x + value * a * b
  template <class T> static T f(T x, T a, T b, T value) {
    return by_kind([](auto x_, auto a_, auto b_, auto v) { return x_ + v * a_ * b_; },
                   [](auto x_, auto a_, auto b_, auto v) { return wrap_add(x_, wrap_mul(wrap_mul(v, a_), b_)); },
                   [](auto x_, auto a_, auto b_, auto v) { return x_ || (v && a_ && b_); }, x, a, b, value);
  }
};
template <> struct Def<OpId::addcdiv> {  // x + value * (a / b); float only
  template <class T> static T f(T x, T a, T b, T value) { return x + value * (a / b); }
};

}  // namespace ember::kl::ew

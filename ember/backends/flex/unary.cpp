// flex kernels: casts, copies and unary maths.
#include "ember/backends/flex/copy.h"
#include "ember/backends/flex/elementwise.h"
#include "ember/detail/convert.h"
#include "ember/kl/scalar.h"
#include "ember/kl/wrap.h"
#include "ember/ops/layout.h"
#include "ember/ops/modes.h"
#include "ember/ops/unary.h"

namespace ember::flex {
namespace {

struct kl_identity_t {
  template <class C> C operator()(C x) const { return x; }
};

template <class To>
struct CastTo {
  template <class C> To operator()(C x) const {
    if constexpr (std::is_same_v<To, bool>) return x != C(0);
    else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<C>)
      return ::ember::detail::float_to_int<To>(x);  // torch's x86 results, defined for all x
    else return To(x);
  }
};

template <class From, class To> void cast_run(const Tensor& out, std::span<const Tensor> ins) {
  if constexpr (std::is_same_v<From, To>) {
    run_map(out, ins, map1_loop<From, kl_identity_t>, kl_identity_t{});
  } else {
    CastTo<compute_t<To>> f;
    run_map(out, ins, map1_to_loop<From, To, CastTo<compute_t<To>>>, f);
  }
}

void cast_into(const Tensor& out, const Tensor& in) {
  if (in.dtype() == out.dtype()) return copy_into(out, in);  // width-only copies, tiled transposes
  Tensor ins[] = {in};
  // One side built is enough (a build with fewer dtypes still loads and casts every dtype); in
  // the full build both branches name the same instantiations.
  if (is_built(in.dtype())) {
    EMBER_DISPATCH_ALL(in.dtype(), "cast", {
      using From = T;
      EMBER_DISPATCH_EVERY(out.dtype(), "cast", cast_run<From, T>(out, ins));
    });
  } else {
    EMBER_DISPATCH_EVERY(in.dtype(), "cast", {
      using From = T;
      EMBER_DISPATCH_ALL(out.dtype(), "cast", cast_run<From, T>(out, ins));
    });
  }
}

TensorList k_cast(const OpCall& c) {
  Tensor out = new_output(c);
  cast_into(out, c.inputs[0]);
  return {out};
}

// The element range [lo, hi] a view reaches in its storage.
std::pair<int64_t, int64_t> reach(const Tensor& t) {
  int64_t lo = t.offset(), hi = t.offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t span = (t.size(d) - 1) * t.stride(d);
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi};
}

// copy(src) -> a fresh contiguous copy; copy(dst, src) -> writes src (broadcast, cast) into dst.
TensorList k_copy(const OpCall& c) {
  if (c.inputs.size() == 1) {
    Tensor out = new_output(c);
    cast_into(out, c.inputs[0]);
    return {out};
  }
  const Tensor& dst = c.inputs[0];
  Tensor src = c.inputs[1];
  // x[1:].copy_(x[:-1]): a source overlapping the destination would be read after parts of it
  // were written; it is copied out first, so the result is what the source held.
  if (dst.numel() && src.numel() && src.is_alias_of(dst)) {
    auto [dl, dh] = reach(dst);
    auto [sl, sh] = reach(src);
    if (dl <= sh && sl <= dh) src = ember::clone(src);
  }
  cast_into(dst, src);
  return {dst};
}

TensorList k_contiguous(const OpCall& c) {
  if (c.inputs[0].is_contiguous()) return {c.inputs[0]};
  Tensor out = new_output(c);
  cast_into(out, c.inputs[0]);
  return {out};
}

// Float maths: integer/bool inputs are first cast to the output's float dtype.
template <class F>
Tensor float_map(const OpCall& c, const F& f) {
  Tensor out = new_output(c);
  Tensor x = c.inputs[0];
  if (x.dtype() != out.dtype()) x = cast(x, out.dtype());
  Tensor ins[] = {x};
  EMBER_DISPATCH_FLOAT(out.dtype(), op_name(c.op), run_map(out, ins, map1_loop<T, F>, f));
  return out;
}

#define EMBER_FLOAT_KERNEL(name, expr)                           \
  TensorList k_##name(const OpCall& c) {                         \
    return {float_map(c, [](auto x) { return expr; })};          \
  }
EMBER_FLOAT_KERNEL(exp, kl::exp(x))
EMBER_FLOAT_KERNEL(exp2, kl::exp2(x))
EMBER_FLOAT_KERNEL(expm1, kl::expm1(x))
EMBER_FLOAT_KERNEL(log, kl::log(x))
EMBER_FLOAT_KERNEL(log2, kl::log2(x))
EMBER_FLOAT_KERNEL(log10, kl::log10(x))
EMBER_FLOAT_KERNEL(log1p, kl::log1p(x))
EMBER_FLOAT_KERNEL(sqrt, kl::sqrt(x))
EMBER_FLOAT_KERNEL(rsqrt, kl::rsqrt(x))
EMBER_FLOAT_KERNEL(reciprocal, decltype(x)(1) / x)
EMBER_FLOAT_KERNEL(sin, kl::sin(x))
EMBER_FLOAT_KERNEL(cos, kl::cos(x))
EMBER_FLOAT_KERNEL(tan, kl::tan(x))
EMBER_FLOAT_KERNEL(asin, kl::asin(x))
EMBER_FLOAT_KERNEL(acos, kl::acos(x))
EMBER_FLOAT_KERNEL(atan, kl::atan(x))
EMBER_FLOAT_KERNEL(sinh, kl::sinh(x))
EMBER_FLOAT_KERNEL(cosh, kl::cosh(x))
EMBER_FLOAT_KERNEL(tanh, kl::tanh(x))
EMBER_FLOAT_KERNEL(asinh, kl::asinh(x))
EMBER_FLOAT_KERNEL(acosh, kl::acosh(x))
EMBER_FLOAT_KERNEL(atanh, kl::atanh(x))
EMBER_FLOAT_KERNEL(erf, kl::erf(x))
EMBER_FLOAT_KERNEL(erfinv, kl::erfinv(x))
EMBER_FLOAT_KERNEL(sigmoid, kl::sigmoid(x))
EMBER_FLOAT_KERNEL(silu, kl::silu(x))
EMBER_FLOAT_KERNEL(mish, kl::mish(x))
EMBER_FLOAT_KERNEL(hardswish, kl::hardswish(x))
EMBER_FLOAT_KERNEL(hardsigmoid, kl::hardsigmoid(x))
#undef EMBER_FLOAT_KERNEL

TensorList k_gelu(const OpCall& c) {
  if (c.attrs.mode == uint8_t(ops::GeluApprox::Tanh)) return {float_map(c, [](auto x) { return kl::gelu_tanh(x); })};
  return {float_map(c, [](auto x) { return kl::gelu(x); })};
}
TensorList k_softplus(const OpCall& c) {
  double beta = c.attrs.f[0], th = c.attrs.f[1];
  return {float_map(c, [=](auto x) {
    using C = decltype(x);
    return kl::softplus(x, C(beta), C(th));
  })};
}
TensorList k_elu(const OpCall& c) {
  double alpha = c.attrs.f[0];
  return {float_map(c, [=](auto x) { return kl::elu(x, decltype(x)(alpha)); })};
}

// Same-dtype maths: over every dtype, only floats, or only integers and bool.
enum class Set { All, Float, IntBool };
template <class F, Set S = Set::All>
Tensor same_map(const OpCall& c, const F& f) {
  Tensor out = new_output(c);
  Tensor x = c.inputs[0];
  if (x.dtype() != out.dtype()) x = cast(x, out.dtype());
  Tensor ins[] = {x};
  if constexpr (S == Set::All) {
    EMBER_DISPATCH_ALL(out.dtype(), op_name(c.op), run_map(out, ins, map1_loop<T, F>, f));
  } else if constexpr (S == Set::Float) {
    EMBER_DISPATCH_FLOAT(out.dtype(), op_name(c.op), run_map(out, ins, map1_loop<T, F>, f));
  } else {
    EMBER_DISPATCH_INT_BOOL(out.dtype(), op_name(c.op), run_map(out, ins, map1_loop<T, F>, f));
  }
  return out;
}

// Integers wrap like torch's: neg and abs of the most negative value give that value back.
TensorList k_neg(const OpCall& c) {
  return {same_map(c, [](auto x) { return kl::wrapping_neg(x); })};
}
TensorList k_abs(const OpCall& c) {
  return {same_map(c, [](auto x) {
    if constexpr (std::is_integral_v<decltype(x)>) return kl::wrapping_abs(x);
    else return kl::select(x < decltype(x)(0), decltype(x)(-x), x);
  })};
}
TensorList k_sign(const OpCall& c) {
  return {same_map(c, [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_same_v<C, bool>) return x;
    else return C(C(x > C(0)) - C(x < C(0)));
  })};
}
TensorList k_square(const OpCall& c) {
  return {same_map(c, [](auto x) { return kl::wrapping_mul(x, x); })};
}
TensorList k_relu(const OpCall& c) {
  return {same_map(c, [](auto x) { return kl::select(x < decltype(x)(0), decltype(x)(0), x); })};
}
TensorList k_leaky_relu(const OpCall& c) {
  double s = c.attrs.f[0];
  return {same_map(c, [=](auto x) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C>)
      return kl::select(x > C(0), x, kl::wrapping_mul(x, ::ember::detail::float_to_int<C>(s)));
    else
      return kl::select(x > C(0), x, C(x * C(s)));
  })};
}
template <class F>
TensorList rounding(const OpCall& c, const F& f) {
  if (!is_floating(c.inputs[0].dtype())) return {ember::clone(c.inputs[0])};
  return {same_map<F, Set::Float>(c, f)};
}
TensorList k_floor(const OpCall& c) { return rounding(c, [](auto x) { return kl::floor(x); }); }
TensorList k_ceil(const OpCall& c) { return rounding(c, [](auto x) { return kl::ceil(x); }); }
TensorList k_round(const OpCall& c) { return rounding(c, [](auto x) { return kl::round_even(x); }); }
TensorList k_trunc(const OpCall& c) { return rounding(c, [](auto x) { return kl::trunc(x); }); }

TensorList k_nan_to_num(const OpCall& c) {
  if (!is_floating(c.inputs[0].dtype())) return {ember::clone(c.inputs[0])};
  const Attrs& a = c.attrs;
  Tensor out = new_output(c);
  Tensor ins[] = {c.inputs[0]};
  EMBER_DISPATCH_FLOAT(out.dtype(), "nan_to_num", {
    using C = compute_t<T>;
    // The dtype's largest finite values, as torch uses by default.
    double hi = std::is_same_v<T, Half> ? 65504.0
                : std::is_same_v<T, BFloat16> ? 3.3895313892515355e38
                : double(std::numeric_limits<C>::max());
    C nanv = C(a.f[0]);
    C pos = a.b[0] ? C(a.f[1]) : C(hi);
    C neg = a.b[1] ? C(a.f[2]) : C(-hi);
    auto f = [=](C x) {
      return kl::select(kl::isnan(x), nanv, kl::select(kl::isinf(x), x > C(0) ? pos : neg, x));
    };
    run_map(out, ins, map1_loop<T, decltype(f)>, f);
  });
  return {out};
}

// Predicates: bool out.
template <class F>
Tensor pred_map(const OpCall& c, const F& f) {
  Tensor out = new_output(c);
  Tensor ins[] = {c.inputs[0]};
  EMBER_DISPATCH_ALL(c.inputs[0].dtype(), op_name(c.op), run_map(out, ins, map1_to_loop<T, bool, F>, f));
  return out;
}
TensorList k_isnan(const OpCall& c) {
  return {pred_map(c, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) return kl::isnan(x);
    else return false;
  })};
}
TensorList k_isinf(const OpCall& c) {
  return {pred_map(c, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) return kl::isinf(x);
    else return false;
  })};
}
TensorList k_isfinite(const OpCall& c) {
  return {pred_map(c, [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) return !kl::isinf(x) && !kl::isnan(x);
    else return true;
  })};
}
TensorList k_logical_not(const OpCall& c) {
  return {pred_map(c, [](auto x) { return x == decltype(x)(0); })};
}
TensorList k_bitwise_not(const OpCall& c) {
  auto f = [](auto x) {
    if constexpr (std::is_same_v<decltype(x), bool>) return !x;
    else return decltype(x)(~x);
  };
  return {same_map<decltype(f), Set::IntBool>(c, f)};
}

}  // namespace

void register_flex_unary(BackendImpl& b) {
  // Complex elements only ever arrive here to be copied as they are (same dtype).
  b.set_kernel(OpId::cast, k_cast, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::copy, k_copy, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::contiguous, k_contiguous, kAllDTypes | kComplexDTypes);
#define EMBER_REG(name) b.set_kernel(OpId::name, k_##name, kAllDTypes);
  EMBER_REG(exp) EMBER_REG(exp2) EMBER_REG(expm1) EMBER_REG(log) EMBER_REG(log2)
  EMBER_REG(log10) EMBER_REG(log1p) EMBER_REG(sqrt) EMBER_REG(rsqrt) EMBER_REG(reciprocal)
  EMBER_REG(sin) EMBER_REG(cos) EMBER_REG(tan) EMBER_REG(asin) EMBER_REG(acos) EMBER_REG(atan)
  EMBER_REG(sinh) EMBER_REG(cosh) EMBER_REG(tanh) EMBER_REG(asinh) EMBER_REG(acosh)
  EMBER_REG(atanh) EMBER_REG(erf) EMBER_REG(erfinv) EMBER_REG(sigmoid) EMBER_REG(silu)
  EMBER_REG(mish) EMBER_REG(hardswish) EMBER_REG(hardsigmoid) EMBER_REG(gelu)
  EMBER_REG(softplus) EMBER_REG(elu) EMBER_REG(sign) EMBER_REG(square) EMBER_REG(floor)
  EMBER_REG(ceil) EMBER_REG(round) EMBER_REG(trunc) EMBER_REG(nan_to_num) EMBER_REG(isnan)
  EMBER_REG(isinf) EMBER_REG(isfinite) EMBER_REG(logical_not)
#undef EMBER_REG
  b.set_kernel(OpId::neg, k_neg, kNumericDTypes);
  b.set_kernel(OpId::abs, k_abs, kNumericDTypes);
  b.set_kernel(OpId::relu, k_relu, kNumericDTypes);
  b.set_kernel(OpId::leaky_relu, k_leaky_relu, kNumericDTypes);
  b.set_kernel(OpId::bitwise_not, k_bitwise_not, kIntDTypes | mask_of(DType::Bool));
}

}  // namespace ember::flex

// flex kernels: fills, ranges and random numbers.
#include <cmath>

#include "ember/backends/flex/elementwise.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/detail/convert.h"
#include "ember/random.h"

namespace ember::flex {
namespace {

// Writes f(i) into each element of a fresh contiguous output, in parallel.
template <class T, class F>
void generate(const Tensor& out, const F& f, int64_t grain = 16384) {
  T* o = static_cast<T*>(out.raw_data());
  parallel_for(out.numel(), grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = f(i);
  });
}

// A double value as T; to an integer T by ember's float -> int rule (never UB).
template <class T>
T from_double(double v) {
  if constexpr (std::is_integral_v<T>) return ::ember::detail::float_to_int<T>(v);
  else return T(compute_t<T>(v));
}

TensorList k_empty(const OpCall& c) { return {new_output(c)}; }

TensorList k_full(const OpCall& c) {
  Tensor out = new_output(c);
  Scalar v = c.attrs.s[0];
  EMBER_DISPATCH_ALL(out.dtype(), "full", {
    const T val = T(v.to<compute_t<T>>());
    generate<T>(out, [val](int64_t) { return val; });
  });
  return {out};
}

TensorList k_arange(const OpCall& c) {
  Tensor out = new_output(c);
  const Attrs& a = c.attrs;
  EMBER_DISPATCH_NUMERIC(out.dtype(), "arange", {
    if constexpr (std::is_integral_v<T>) {
      int64_t s = a.s[0].to_int(), st = a.s[2].to_int();
      if (a.s[0].is_floating() || a.s[2].is_floating()) {
        double sd = a.s[0].to_double(), std_ = a.s[2].to_double();
        generate<T>(out, [=](int64_t i) { return from_double<T>(sd + std_ * double(i)); });
      } else {
        // start + step * i in unsigned arithmetic: the value lies between start and end, but
        // step * i alone may not fit in int64 (arange(-2^63, 2^63 - 1, 2^62)).
        generate<T>(out, [=](int64_t i) {
          return T(int64_t(uint64_t(s) + uint64_t(st) * uint64_t(i)));
        });
      }
    } else {
      double s = a.s[0].to_double(), st = a.s[2].to_double();
      generate<T>(out, [=](int64_t i) { return T(compute_t<T>(s + st * double(i))); });
    }
  });
  return {out};
}

TensorList k_linspace(const OpCall& c) {
  Tensor out = new_output(c);
  const Attrs& a = c.attrs;
  int64_t n = a.i[0];
  double start = a.f[0], end = a.f[1];
  double step = n > 1 ? (end - start) / double(n - 1) : 0;
  EMBER_DISPATCH_NUMERIC(out.dtype(), "linspace", {
    // Like torch: the first half counts up from start, the second half down from end.
    int64_t half = n / 2;
    generate<T>(out, [=](int64_t i) {
      double v = i < half ? start + step * double(i) : end - step * double(n - 1 - i);
      return from_double<T>(v);
    });
  });
  return {out};
}

TensorList k_eye(const OpCall& c) {
  Tensor out = new_output(c);
  int64_t m = c.attrs.i[1];
  EMBER_DISPATCH_ALL(out.dtype(), "eye", {
    generate<T>(out, [m](int64_t i) {
      return T(compute_t<T>(m > 0 && i / m == i % m ? 1 : 0));
    });
  });
  return {out};
}

// --- random ---
template <class T>
T uniform_at(const ::ember::detail::PhiloxState& st, int64_t i, double lo, double hi) {
  auto r = ::ember::detail::philox_at(st.seed, st.offset, uint64_t(i));
  if constexpr (std::is_same_v<T, double>) return lo + (hi - lo) * ::ember::detail::u01d(r[0], r[1]);
  else {
    float u = ::ember::detail::u01f(r[0]);
    T v = T(float(lo) + float(hi - lo) * u);
    // Rounding (f16/bf16, or lo + w*u at the top) can reach `hi`; keep the interval half-open.
    return float(v) >= float(hi) && hi > lo ? T(float(lo)) : v;
  }
}
template <class T>
T normal_at(const ::ember::detail::PhiloxState& st, int64_t i, double mean, double sd) {
  auto r = ::ember::detail::philox_at(st.seed, st.offset, uint64_t(i));
  // Box-Muller on two uniforms in (0, 1].
  double u1 = 1.0 - ::ember::detail::u01d(r[0], r[1]);
  double u2 = ::ember::detail::u01d(r[2], r[3]);
  double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  return T(compute_t<T>(mean + sd * z));
}

TensorList k_uniformlike(const OpCall& c, double lo, double hi) {
  Tensor out = new_output(c);
  const auto st = ::ember::detail::philox_of(c.attrs);
  EMBER_DISPATCH_FLOAT(out.dtype(), op_name(c.op), {
    generate<T>(out, [=](int64_t i) { return T(uniform_at<compute_t<T>>(st, i, lo, hi)); });
  });
  return {out};
}
TensorList k_rand(const OpCall& c) { return k_uniformlike(c, 0, 1); }
TensorList k_uniform(const OpCall& c) { return k_uniformlike(c, c.attrs.f[0], c.attrs.f[1]); }

TensorList k_normallike(const OpCall& c, double mean, double sd) {
  Tensor out = new_output(c);
  const auto st = ::ember::detail::philox_of(c.attrs);
  EMBER_DISPATCH_FLOAT(out.dtype(), op_name(c.op), {
    generate<T>(out, [=](int64_t i) { return normal_at<T>(st, i, mean, sd); });
  });
  return {out};
}
TensorList k_randn(const OpCall& c) { return k_normallike(c, 0, 1); }
TensorList k_normal(const OpCall& c) { return k_normallike(c, c.attrs.f[0], c.attrs.f[1]); }

TensorList k_randint(const OpCall& c) {
  Tensor out = new_output(c);
  const auto st = ::ember::detail::philox_of(c.attrs);
  int64_t lo = c.attrs.i[0];
  // high - low and low + draw in unsigned arithmetic: the range may exceed INT64_MAX.
  uint64_t range = uint64_t(c.attrs.i[1]) - uint64_t(lo);
  EMBER_DISPATCH_NUMERIC(out.dtype(), "randint", {
    generate<T>(out, [=](int64_t i) {
      auto r = ::ember::detail::philox_at(st.seed, st.offset, uint64_t(i));
      uint64_t x = (uint64_t(r[0]) << 32) | r[1];
      return T(compute_t<T>(int64_t(uint64_t(lo) + x % range)));
    });
  });
  return {out};
}

TensorList k_bernoulli(const OpCall& c) {
  Tensor out = new_output(c);
  const auto st = ::ember::detail::philox_of(c.attrs);
  Tensor p = c.inputs[0].contiguous();
  bool fixed = c.attrs.b[0];
  double pf = c.attrs.f[0];
  EMBER_DISPATCH_FLOAT(out.dtype(), "bernoulli", {
    const T* pp = static_cast<const T*>(p.raw_data());
    // Probabilities outside [0, 1] (NaN included) have no meaning: refused, as torch does,
    // before any draw.
    if (!fixed)
      for (int64_t i = 0; i < p.numel(); ++i) {
        double prob = double(compute_t<T>(pp[i]));
        if (!(prob >= 0 && prob <= 1))
          ::ember::detail::throw_value("bernoulli", "expected probabilities in [0, 1], found " +
                                                        std::to_string(prob) + " at element " +
                                                        std::to_string(i));
      }
    generate<T>(out, [=](int64_t i) {
      double prob = fixed ? pf : double(compute_t<T>(pp[i]));
      auto r = ::ember::detail::philox_at(st.seed, st.offset, uint64_t(i));
      return T(compute_t<T>(::ember::detail::u01d(r[0], r[1]) < prob ? 1 : 0));
    });
  });
  return {out};
}

}  // namespace

void register_flex_creation(BackendImpl& b) {
  b.set_kernel(OpId::empty, k_empty, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::full, k_full, kAllDTypes);
  b.set_kernel(OpId::arange, k_arange, kNumericDTypes);
  b.set_kernel(OpId::linspace, k_linspace, kNumericDTypes);
  b.set_kernel(OpId::eye, k_eye, kAllDTypes);
  b.set_kernel(OpId::rand, k_rand, kFloatDTypes);
  b.set_kernel(OpId::uniform, k_uniform, kFloatDTypes);
  b.set_kernel(OpId::randn, k_randn, kFloatDTypes);
  b.set_kernel(OpId::normal, k_normal, kFloatDTypes);
  b.set_kernel(OpId::randint, k_randint, kNumericDTypes);
  b.set_kernel(OpId::bernoulli, k_bernoulli, kFloatDTypes);
}

}  // namespace ember::flex

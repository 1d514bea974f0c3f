// flex kernels: statistical reductions through the engine — var/std (Welford, in double like
// torch), logsumexp (one pass with a running max) and p-norms.
#include <cmath>
#include <limits>
#include <vector>

#include "ember/backends/flex/reduce_engine.h"
#include "ember/backends/flex/reduce_kernels.h"
#include "ember/kl/scalar.h"
#include "ember/ops/common.h"
#include "ember/ops/unary.h"

namespace ember::flex {
namespace {

Shape dims_of(const OpCall& c) {
  return ops::reduce_dims(c.attrs.ints, c.inputs[0].dim(), op_name(c.op));
}

// --- var / std ---
struct Welford {
  double n = 0, mean = 0, m2 = 0;
  Welford() = default;
  explicit Welford(double x) : n(1), mean(x) {}
};
template <class T> struct VarOp {
  using Acc = Welford;
  double correction = 1;
  bool take_sqrt = false;
  Acc init() const { return {}; }
  Acc step(Acc a, Acc x) const {  // x holds one element
    a.n += 1;
    const double d = x.mean - a.mean;
    a.mean += d / a.n;
    a.m2 += d * (x.mean - a.mean);
    return a;
  }
  Acc merge(Acc a, Acc b) const {  // Chan et al.'s pairwise combination
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    const double n = a.n + b.n, d = b.mean - a.mean;
    a.mean += d * (b.n / n);
    a.m2 += b.m2 + d * d * (a.n * b.n / n);
    a.n = n;
    return a;
  }
  T done(Acc a, int64_t) const {
    // torch divides by max(0, n - correction): too few elements give inf (or nan for 0/0).
    const double v = a.m2 / std::max(0.0, a.n - correction);
    return T(compute_t<T>(take_sqrt ? std::sqrt(v) : v));
  }
};

// Welford state of a contiguous run, in cache-sized chunks: each chunk is summed, then its squared
// deviations from its own mean (with the rounding of that mean corrected), and chunks combine
// pairwise. Two vectorisable sweeps instead of a division per element.
template <class T>
Welford run_moments(const T* p, int64_t len, const VarOp<T>& op) {
  constexpr int64_t kChunk = 4096;
  constexpr int L = 8;
  Welford acc;
  for (int64_t c0 = 0; c0 < len; c0 += kChunk) {
    const T* q = p + c0;
    const int64_t m = std::min(kChunk, len - c0);
    double s[L] = {};
    int64_t i = 0;
    for (; i + L <= m; i += L)
      for (int j = 0; j < L; ++j) s[j] += double(compute_t<T>(q[i + j]));
    for (; i < m; ++i) s[0] += double(compute_t<T>(q[i]));
    double sum = 0;
    for (double e : s) sum += e;
    const double mean = sum / double(m);
    double d1[L] = {}, d2[L] = {};
    for (i = 0; i + L <= m; i += L)
      for (int j = 0; j < L; ++j) {
        const double d = double(compute_t<T>(q[i + j])) - mean;
        d1[j] += d;
        d2[j] += d * d;
      }
    for (; i < m; ++i) {
      const double d = double(compute_t<T>(q[i])) - mean;
      d1[0] += d;
      d2[0] += d * d;
    }
    double sd = 0, sq = 0;
    for (int j = 0; j < L; ++j) {
      sd += d1[j];
      sq += d2[j];
    }
    Welford w;
    w.n = double(m);
    w.mean = mean + sd / double(m);
    w.m2 = sq - sd * sd / double(m);
    acc = op.merge(acc, w);
  }
  return acc;
}

TensorList k_var(const OpCall& c) {
  Tensor out = new_output(c);
  const Tensor& x = c.inputs[0];
  Shape dims = dims_of(c);
  const ReduceGeom g = reduce_geom(x, dims);
  // Each output a contiguous run (rows, or the whole tensor): the chunked two-pass path.
  const bool runs = g.n_out > 0 && g.n_red > 0 && g.red_sizes.size() == 1 && g.red_strides[0] == 1;
  EMBER_DISPATCH_FLOAT(x.dtype(), op_name(c.op), {
    VarOp<T> op;
    op.correction = c.attrs.f[0];
    op.take_sqrt = c.op == OpId::std;
    if (!runs) {
      reduce_run<T, T>(x, dims, out, op);
    } else {
      const T* xp = static_cast<const T*>(x.raw_data());
      T* o = static_cast<T*>(out.raw_data());
      const int64_t n = g.n_red;
      constexpr int64_t kBlock = 65536;
      if (g.n_out < num_threads() && n >= 2 * kBlock) {  // few long runs: split each one
        for (int64_t r = 0; r < g.n_out; ++r) {
          const T* base = xp + offset_of(r, g.kept_sizes, g.kept_strides);
          std::vector<Welford> part(static_cast<size_t>((n + kBlock - 1) / kBlock));
          parallel_for(int64_t(part.size()), 1, [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k)
              part[size_t(k)] =
                  run_moments(base + k * kBlock, std::min(kBlock, n - k * kBlock), op);
          });
          Welford acc;
          for (const Welford& w : part) acc = op.merge(acc, w);
          o[r] = op.done(acc, n);
        }
      } else {
        parallel_for(g.n_out, std::max<int64_t>(1, 32768 / n), [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r)
            o[r] = op.done(run_moments(xp + offset_of(r, g.kept_sizes, g.kept_strides), n, op), n);
        });
      }
    }
  });
  return {out};
}

// --- logsumexp ---
// A running (max, sum of exp(x - max)). Infinite or NaN maxima short-cut the way torch's
// max-shifted formula ends: any NaN -> NaN, any +inf -> inf, only -inf (or nothing) -> -inf.
template <class A> struct Lse {
  A m = -std::numeric_limits<A>::infinity(), s = 0;
  Lse() = default;
  explicit Lse(A x) : m(x), s(1) {}
  Lse(A m_, A s_) : m(m_), s(s_) {}
};
template <class T> struct LseOp {
  using A = compute_t<T>;
  using Acc = Lse<A>;
  static constexpr A kInf = std::numeric_limits<A>::infinity();
  Acc init() const { return {}; }
  Acc step(Acc a, Acc x) const {  // x holds one element: one exp per element
    const A v = x.m;
    if (v <= a.m) {
      if (a.m > -kInf && a.m < kInf) a.s += kl::exp(v - a.m);  // else (-inf, 0) or +inf stays
      return a;
    }
    if (v > a.m) {
      if (v == kInf) return {kInf, A(1)};
      return {v, a.s * kl::exp(a.m - v) + A(1)};
    }
    return {std::numeric_limits<A>::quiet_NaN(), A(1)};  // v or a.m is NaN
  }
  Acc merge(Acc a, Acc b) const {
    const A m = kl::maximum(a.m, b.m);
    if (m == -kInf) return {};
    if (!(m < kInf)) return {m, A(1)};  // +inf or NaN
    return {m, a.s * kl::exp(a.m - m) + b.s * kl::exp(b.m - m)};
  }
  T done(Acc a, int64_t) const {
    if (!(a.m > -kInf && a.m < kInf)) return T(a.m);
    return T(a.m + kl::log(a.s));
  }
};

TensorList k_logsumexp(const OpCall& c) {
  Tensor out = new_output(c);
  Tensor x = c.inputs[0];
  if (x.dtype() != out.dtype()) x = cast(x, out.dtype());  // integers reduce in the float dtype
  Shape dims = dims_of(c);
  EMBER_DISPATCH_FLOAT(out.dtype(), "logsumexp", reduce_run<T, T>(x, dims, out, LseOp<T>{}));
  return {out};
}

// --- norm ---
// Each p gets its own op so the common ones (1, 2, inf) stay cheap. Like torch.norm, the norm of
// nothing is 0 for every p.
template <class T, class Step, class Merge, class Done> struct NormOp {
  using A = compute_t<T>;
  using Acc = A;
  A identity;
  Step step_fn;
  Merge merge_fn;
  Done done_fn;
  A init() const { return identity; }
  A step(A a, A x) const { return step_fn(a, x); }
  A merge(A a, A b) const { return merge_fn(a, b); }
  T done(A a, int64_t n) const { return T(n ? done_fn(a) : A(0)); }
};
template <class T, class Step, class Merge, class Done>
void run_norm(const Tensor& x, const Shape& dims, const Tensor& out, compute_t<T> identity,
              Step s, Merge m, Done d) {
  reduce_run<T, T>(x, dims, out, NormOp<T, Step, Merge, Done>{identity, s, m, d});
}

TensorList k_norm(const OpCall& c) {
  Tensor out = new_output(c);
  const Tensor& x = c.inputs[0];
  Shape dims = dims_of(c);
  const double p = c.attrs.f[0];
  EMBER_DISPATCH_FLOAT(x.dtype(), "norm", {
    using A = compute_t<T>;
    auto add = [](A a, A b) { return a + b; };
    auto same = [](A a) { return a; };
    if (p == 2) {
      run_norm<T>(x, dims, out, A(0), [](A a, A v) { return a + v * v; }, add,
                  [](A a) { return kl::sqrt(a); });
    } else if (p == 1) {
      run_norm<T>(x, dims, out, A(0), [](A a, A v) { return a + kl::fabs(v); }, add, same);
    } else if (std::isinf(p)) {
      auto mx = [](A a, A b) { return kl::maximum(a, b); };
      auto mn = [](A a, A b) { return kl::minimum(a, b); };
      if (p > 0)
        run_norm<T>(x, dims, out, A(0), [=](A a, A v) { return mx(a, kl::fabs(v)); }, mx, same);
      else
        run_norm<T>(x, dims, out, std::numeric_limits<A>::infinity(),
                    [=](A a, A v) { return mn(a, kl::fabs(v)); }, mn, same);
    } else if (p == 0) {
      run_norm<T>(x, dims, out, A(0), [](A a, A v) { return a + A(v != A(0)); }, add, same);
    } else {
      const A pa = A(p), inv = A(1.0 / p);
      run_norm<T>(x, dims, out, A(0), [=](A a, A v) { return a + kl::pow(kl::fabs(v), pa); },
                  add, [=](A a) { return kl::pow(a, inv); });
    }
  });
  return {out};
}

}  // namespace

void register_flex_reduce_stats(BackendImpl& b) {
  b.set_kernel(OpId::var, k_var, kFloatDTypes);
  b.set_kernel(OpId::std, k_var, kFloatDTypes);
  b.set_kernel(OpId::logsumexp, k_logsumexp, kAllDTypes);
  b.set_kernel(OpId::norm, k_norm, kFloatDTypes);
}

}  // namespace ember::flex

// Combiners shared by the reduce and scan templates.
#include "ember/kl/templates/combine.h"

#include <cstdint>

#include "ember/error.h"

namespace ember::kl {
namespace {

Builder& bd() { return Builder::current(); }
Type acc_type(const Reduction& r, int lanes) {
  DType d = r.kind == Combiner::Any || r.kind == Combiner::All ? DType::Bool : r.acc;
  return {d, uint8_t(lanes)};
}
bool floating(const Expr& x) { return is_floating(x.dtype()); }
// x beats best for a max (NaN beats everything but NaN); symmetric for a min.
Expr beats(const Expr& x, const Expr& best, bool max_kind) {
  Expr better = max_kind ? x > best : x < best;
  if (!floating(x)) return better;
  return better || (isnan(x) && !isnan(best));
}
Expr same(const Expr& a, const Expr& b) {
  if (!floating(a)) return a == b;
  return a == b || (isnan(a) && isnan(b));
}
// exp(m_part - m) * s_part, zero when the part saw nothing but -inf.
Expr rescale(const Expr& s, const Expr& m_part, const Expr& m) {
  return select(m_part == lowest(m_part.type()), lit(s, 0), s * exp(m_part - m));
}

}  // namespace

int reduced_values(Combiner c) {
  switch (c) {
    case Combiner::ArgMax: case Combiner::ArgMin: case Combiner::Softmax: return 2;
    case Combiner::Welford: return 3;
    default: return 1;
  }
}

Expr lowest(Type t) {
  if (is_floating(t.dtype)) return bd().constant(t, -__builtin_inf());
  if (t.dtype == DType::Bool) return bd().constant_int(t, 0);
  if (!is_signed(t.dtype)) return bd().constant_int(t, 0);
  return bd().constant_int(t, int64_t(uint64_t(1) << (itemsize(t.dtype) * 8 - 1)));
}

Expr highest(Type t) {
  if (is_floating(t.dtype)) return bd().constant(t, __builtin_inf());
  if (t.dtype == DType::Bool) return bd().constant_int(t, 1);
  if (!is_signed(t.dtype)) return bd().constant_int(t, int64_t(uint64_t(1) << (itemsize(t.dtype) * 8)) - 1);
  return bd().constant_int(t, int64_t((uint64_t(1) << (itemsize(t.dtype) * 8 - 1)) - 1));
}

State combine_identity(const Reduction& r, int lanes) {
  const Type t = acc_type(r, lanes);
  const Type i64{DType::I64, uint8_t(lanes)};
  switch (r.kind) {
    case Combiner::Sum: return {bd().constant(t, 0)};
    case Combiner::Prod: return {bd().constant(t, 1)};
    case Combiner::Max: return {lowest(t)};
    case Combiner::Min: return {highest(t)};
    case Combiner::Any: return {bd().constant_int(t, 0)};
    case Combiner::All: return {bd().constant_int(t, 1)};
    case Combiner::ArgMax: return {lowest(t), bd().constant_int(i64, 0)};
    case Combiner::ArgMin: return {highest(t), bd().constant_int(i64, 0)};
    case Combiner::Welford: return {bd().constant(t, 0), bd().constant(t, 0), bd().constant(t, 0)};
    case Combiner::Softmax: return {lowest(t), bd().constant(t, 0)};
  }
  return {};
}

State combine_update(const Reduction& r, const State& s, const Expr& value, const Expr& idx) {
  const Expr x = cast(value, acc_type(r, 1).dtype);
  switch (r.kind) {
    case Combiner::Sum: return {s[0] + x};
    case Combiner::Prod: return {s[0] * x};
    case Combiner::Max: case Combiner::Min: {
      const bool mx = r.kind == Combiner::Max;
      return {select(beats(x, s[0], mx), x, s[0])};
    }
    case Combiner::Any: return {s[0] || x};
    case Combiner::All: return {s[0] && x};
    case Combiner::ArgMax: case Combiner::ArgMin: {
      // Strictly better only: the first index of the extreme stays.
      const Expr take = beats(x, s[0], r.kind == Combiner::ArgMax);
      return {select(take, x, s[0]), select(take, idx, s[1])};
    }
    case Combiner::Welford: {
      const Expr n = s[2] + lit(s[2], 1);
      const Expr d = x - s[0];
      const Expr mean = s[0] + d / n;
      return {mean, s[1] + d * (x - mean), n};
    }
    case Combiner::Softmax: {
      // One exp per element: e = exp(-|x - m|) rescales whichever side is smaller.
      const Expr m = s[0], sum = s[1];
      const Expr bigger = x > m;
      Expr e = exp(-fabs(x - m));
      e = select(x == lowest(x.type()), lit(e, 0), e);  // also when m is still -inf
      return {select(bigger, x, m), select(bigger, sum * e + lit(sum, 1), sum + e)};
    }
  }
  return s;
}

State combine_merge(const Reduction& r, const State& a, const State& b) {
  switch (r.kind) {
    case Combiner::Sum: return {a[0] + b[0]};
    case Combiner::Prod: return {a[0] * b[0]};
    case Combiner::Max: case Combiner::Min:
      return {select(beats(b[0], a[0], r.kind == Combiner::Max), b[0], a[0])};
    case Combiner::Any: return {a[0] || b[0]};
    case Combiner::All: return {a[0] && b[0]};
    case Combiner::ArgMax: case Combiner::ArgMin: {
      const Expr take = beats(b[0], a[0], r.kind == Combiner::ArgMax) || (same(a[0], b[0]) && b[1] < a[1]);
      return {select(take, b[0], a[0]), select(take, b[1], a[1])};
    }
    case Combiner::Welford: {  // Chan et al.'s parallel update
      const Expr n = a[2] + b[2];
      const Expr zero = lit(n, 0);
      const Expr w = select(n > zero, b[2] / n, zero);
      const Expr d = b[0] - a[0];
      return {a[0] + d * w, a[1] + b[1] + d * d * a[2] * w, n};
    }
    case Combiner::Softmax: {
      const Expr m = select(beats(b[0], a[0], true), b[0], a[0]);
      return {m, rescale(a[1], a[0], m) + rescale(b[1], b[0], m)};
    }
  }
  return a;
}

State combine_lanes(const Reduction& r, const State& s) {
  const int lanes = s[0].lanes();
  std::vector<State> parts;
  for (int l = 0; l < lanes; ++l) {
    State p;
    for (const Expr& v : s) p.push_back(extract(v, l));
    parts.push_back(std::move(p));
  }
  while (parts.size() > 1) {  // pairwise, so sums round like a tree
    std::vector<State> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) next.push_back(combine_merge(r, parts[i], parts[i + 1]));
    if (parts.size() % 2) next.push_back(parts.back());
    parts = std::move(next);
  }
  return parts[0];
}

}  // namespace ember::kl

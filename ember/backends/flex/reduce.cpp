// flex kernels: reductions through the engine (sum, mean, prod, amax/amin and whole-tensor
// max/min, any/all, count_nonzero) and the family's registration.
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/reduce_engine.h"
#include "ember/backends/flex/reduce_kernels.h"
#include "ember/kl/scalar.h"
#include "ember/kl/wrap.h"
#include "ember/ops/common.h"
#include "ember/ops/unary.h"

namespace ember::flex {
namespace {

template <class A> struct SumOp {
  using Acc = A;
  A init() const { return A(0); }
  // Integer sums wrap like torch's (int64 accumulator); float sums are plain additions.
  A step(A a, A x) const { return kl::wrapping_add(a, x); }
  A merge(A a, A b) const { return kl::wrapping_add(a, b); }
  A done(A a, int64_t) const { return a; }
};
template <class A> struct MeanOp : SumOp<A> {
  A done(A a, int64_t n) const { return n ? a / A(n) : std::numeric_limits<A>::quiet_NaN(); }
};
template <class A> struct ProdOp {
  using Acc = A;
  A init() const { return A(1); }
  A step(A a, A x) const { return kl::wrapping_mul(a, x); }
  A merge(A a, A b) const { return kl::wrapping_mul(a, b); }
  A done(A a, int64_t) const { return a; }
};
template <class A> struct MaxOp {
  using Acc = A;
  A init() const {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                : std::numeric_limits<A>::lowest();
  }
  A step(A a, A x) const { return kl::maximum(a, x); }
  A merge(A a, A b) const { return kl::maximum(a, b); }
  A done(A a, int64_t) const { return a; }
};
template <class A> struct MinOp {
  using Acc = A;
  A init() const {
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                : std::numeric_limits<A>::max();
  }
  A step(A a, A x) const { return kl::minimum(a, x); }
  A merge(A a, A b) const { return kl::minimum(a, b); }
  A done(A a, int64_t) const { return a; }
};
struct AnyOp {
  using Acc = bool;
  bool init() const { return false; }
  bool step(bool a, bool x) const { return a || x; }
  bool merge(bool a, bool b) const { return a || b; }
  bool done(bool a, int64_t) const { return a; }
};
struct AllOp {
  using Acc = bool;
  bool init() const { return true; }
  bool step(bool a, bool x) const { return a && x; }
  bool merge(bool a, bool b) const { return a && b; }
  bool done(bool a, int64_t) const { return a; }
};
// Counts non-zeros: the engine hands each element over as an Acc, so Acc remembers x != 0
// (a plain int64 Acc would truncate 0.5 to 0).
struct NonZero {
  int64_t n = 0;
  NonZero() = default;
  template <class C> explicit NonZero(C x) : n(x != C(0)) {}
};
struct CountOp {
  using Acc = NonZero;
  Acc init() const { return {}; }
  Acc step(Acc a, Acc x) const {
    a.n += x.n;
    return a;
  }
  Acc merge(Acc a, Acc b) const { return step(a, b); }
  int64_t done(Acc a, int64_t) const { return a.n; }
};

Shape dims_of(const OpCall& c) {
  return ops::reduce_dims(c.attrs.ints, c.inputs[0].dim(), op_name(c.op));
}

// Accumulation type: float for f16/bf16/f32 (lanes keep it accurate), double for f64, int64 for
// integers.
template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, compute_t<T>, int64_t>;

template <class Op>
TensorList bool_reduce(const OpCall& c) {
  Tensor out = new_output(c);
  Tensor x = c.inputs[0];
  if (x.dtype() != DType::Bool) x = cast(x, DType::Bool);
  // A uint8 output (torch's any/all of uint8) holds the same 0/1 bytes as a bool one.
  reduce_run<bool, bool>(x, dims_of(c), out, Op{});
  return {out};
}

template <template <class> class OpT>
TensorList arith_reduce(const OpCall& c) {
  Tensor out = new_output(c);
  Tensor x = c.inputs[0];
  // sum/prod with dtype=bool add/multiply in bool, i.e. any/all of the non-zeros.
  if (out.dtype() == DType::Bool)
    return c.op == OpId::prod ? bool_reduce<AllOp>(c) : bool_reduce<AnyOp>(c);
  if (x.dtype() != out.dtype()) x = cast(x, out.dtype());
  Shape dims = dims_of(c);
  EMBER_DISPATCH_NUMERIC(out.dtype(), op_name(c.op), {
    using A = acc_t<T>;
    struct Wrap : OpT<A> {
      T done(A a, int64_t n) const { return T(compute_t<T>(OpT<A>::done(a, n))); }
    };
    reduce_run<T, T>(x, dims, out, Wrap{});
  });
  return {out};
}

TensorList k_sum(const OpCall& c) { return arith_reduce<SumOp>(c); }
TensorList k_prod(const OpCall& c) { return arith_reduce<ProdOp>(c); }
TensorList k_mean(const OpCall& c) { return arith_reduce<MeanOp>(c); }

template <template <class> class OpT>
TensorList minmax_reduce(const OpCall& c) {
  Tensor out = new_output(c);
  const Tensor& x = c.inputs[0];
  Shape dims = dims_of(c);
  EMBER_DISPATCH_ALL(out.dtype(), op_name(c.op), {
    using A = compute_t<T>;
    struct Wrap : OpT<A> {
      T done(A a, int64_t) const { return T(a); }
    };
    reduce_run<T, T>(x, dims, out, Wrap{});
  });
  return {out};
}

TensorList k_count_nonzero(const OpCall& c) {
  Tensor out = new_output(c);
  const Tensor& x = c.inputs[0];
  Shape dims = dims_of(c);
  EMBER_DISPATCH_ALL(x.dtype(), "count_nonzero", reduce_run<T, int64_t>(x, dims, out, CountOp{}));
  return {out};
}

// max/min: the whole-tensor form is amax/amin over every dim; the dim form tracks indices.
TensorList k_max(const OpCall& c) {
  return c.attrs.b[1] ? k_index_reduce(c) : minmax_reduce<MaxOp>(c);
}
TensorList k_min(const OpCall& c) {
  return c.attrs.b[1] ? k_index_reduce(c) : minmax_reduce<MinOp>(c);
}

}  // namespace

void register_flex_reduce(BackendImpl& b) {
  b.set_kernel(OpId::sum, k_sum, kAllDTypes);
  b.set_kernel(OpId::prod, k_prod, kAllDTypes);
  b.set_kernel(OpId::mean, k_mean, kAllDTypes);  // integers with a float dtype= are cast first
  b.set_kernel(OpId::amax, minmax_reduce<MaxOp>, kAllDTypes);
  b.set_kernel(OpId::amin, minmax_reduce<MinOp>, kAllDTypes);
  b.set_kernel(OpId::any, bool_reduce<AnyOp>, kAllDTypes);
  b.set_kernel(OpId::all, bool_reduce<AllOp>, kAllDTypes);
  b.set_kernel(OpId::max, k_max, kAllDTypes);
  b.set_kernel(OpId::min, k_min, kAllDTypes);
  b.set_kernel(OpId::argmax, k_index_reduce, kNumericDTypes);
  b.set_kernel(OpId::argmin, k_index_reduce, kNumericDTypes);
  b.set_kernel(OpId::count_nonzero, k_count_nonzero, kAllDTypes);
  register_flex_reduce_stats(b);
  register_flex_scan(b);
  register_flex_sort(b);
}

}  // namespace ember::flex

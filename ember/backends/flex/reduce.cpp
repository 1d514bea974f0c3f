// flex kernels: reductions.
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/reduce_engine.h"
#include "ember/kl/scalar.h"
#include "ember/ops/common.h"
#include "ember/ops/unary.h"

namespace ember::flex {
namespace {

template <class A> struct SumOp {
  using Acc = A;
  A init() const { return A(0); }
  A step(A a, A x) const { return a + x; }
  A merge(A a, A b) const { return a + b; }
  A done(A a, int64_t) const { return a; }
};
template <class A> struct MeanOp : SumOp<A> {
  A done(A a, int64_t n) const { return n ? a / A(n) : std::numeric_limits<A>::quiet_NaN(); }
};
template <class A> struct ProdOp {
  using Acc = A;
  A init() const { return A(1); }
  A step(A a, A x) const { return a * x; }
  A merge(A a, A b) const { return a * b; }
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

Shape dims_of(const OpCall& c) { return ops::reduce_dims(c.attrs.ints, c.inputs[0].dim(), op_name(c.op)); }

// Accumulation type: float for f16/bf16/f32 (lanes keep it accurate), double for f64, int64 for
// integers.
template <class T> using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, compute_t<T>, int64_t>;

template <template <class> class OpT>
TensorList arith_reduce(const OpCall& c) {
  Tensor out = new_output(c);
  Tensor x = c.inputs[0];
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

template <class Op>
TensorList bool_reduce(const OpCall& c) {
  Tensor out = new_output(c);
  Tensor x = c.inputs[0];
  if (x.dtype() != DType::Bool) x = cast(x, DType::Bool);
  reduce_run<bool, bool>(x, dims_of(c), out, Op{});
  return {out};
}

}  // namespace

void register_flex_reduce(BackendImpl& b) {
  b.set_kernel(OpId::sum, k_sum, kAllDTypes);
  b.set_kernel(OpId::prod, k_prod, kAllDTypes);
  b.set_kernel(OpId::mean, k_mean, kFloatDTypes);
  b.set_kernel(OpId::amax, minmax_reduce<MaxOp>, kAllDTypes);
  b.set_kernel(OpId::amin, minmax_reduce<MinOp>, kAllDTypes);
  b.set_kernel(OpId::any, bool_reduce<AnyOp>, kAllDTypes);
  b.set_kernel(OpId::all, bool_reduce<AllOp>, kAllDTypes);
}

}  // namespace ember::flex

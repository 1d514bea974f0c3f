// Scans, sorting and order statistics: API, inference, registration.
// Attrs: i[0] dim for all of them.
//   cumsum, cumprod: dtype/has_dtype (the input is cast to it first).
//   cummax, cummin: (values, int64 indices), same shape as the input.
//   sort, argsort: b[0] descending (always stable).
//   topk: i[1] k, b[0] largest, b[1] sorted.  kthvalue: i[1] k (1-based), b[0] keepdim.
//   median: b[1] a dim was given (then (values, indices) with b[0] keepdim; else a 0-d value).
#include "ember/backends/backend.h"
#include "ember/ops/binary.h"
#include "ember/ops/common.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember {
namespace {

// Size of dim `d` of x (a 0-d tensor counts as one element along dim 0).
int64_t dim_size(const Tensor& x, int64_t d) { return x.dim() ? x.shape()[size_t(d)] : 1; }

void require_not_bool(const Tensor& x, const char* name) {
  if (x.dtype() == DType::Bool)
    detail::throw_dtype(name, "expected a numeric dtype (not bool), found bool");
}

void infer_scan(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  ops::require_defined(in[0], name);
  const Tensor& x = in[0];
  const DType d = x.dtype();
  if (op == OpId::median && !a.b[1]) {
    require_not_bool(x, name);
    out.add({}, d);
    return;
  }
  const int64_t dim = wrap_dim(a.i[0], x.dim(), name);
  const int64_t n = dim_size(x, dim);
  switch (op) {
    case OpId::cumsum: case OpId::cumprod: {
      DType r = a.has_dtype ? a.dtype : (is_integral(d, true) ? DType::I64 : d);
      if (r == DType::Bool)
        detail::throw_dtype(name, "expected a numeric output dtype, found bool");
      out.add(x.shape(), r);
      return;
    }
    case OpId::cummax: case OpId::cummin: case OpId::sort:
      out.add(x.shape(), d);
      out.add(x.shape(), DType::I64);
      return;
    case OpId::argsort: out.add(x.shape(), DType::I64); return;
    case OpId::topk: {
      require_not_bool(x, name);
      const int64_t k = a.i[1];
      if (k < 0 || k > n)
        detail::throw_index(name, "selected index k out of range: expected k in [0, " +
                                      std::to_string(n) + "], found " + std::to_string(k));
      Shape s = x.shape();
      if (x.dim()) s[size_t(dim)] = k;
      out.add(s, d);
      out.add(s, DType::I64);
      return;
    }
    case OpId::kthvalue: case OpId::median: {
      require_not_bool(x, name);
      if (n == 0)
        detail::throw_index(name, "expected reduction dim " + std::to_string(dim) +
                                      " to have non-zero size, found 0");
      if (op == OpId::kthvalue && (a.i[1] < 1 || a.i[1] > n))
        detail::throw_index(name, "selected number k out of range for dim " +
                                      std::to_string(dim) + ": expected k in [1, " +
                                      std::to_string(n) + "], found " + std::to_string(a.i[1]));
      Shape s = ops::reduced_shape(x.shape(), x.dim() ? Shape{dim} : Shape{}, a.b[0]);
      out.add(s, d);
      out.add(s, DType::I64);
      return;
    }
    default: detail::throw_not_implemented(name, "not a scan op");
  }
}

Attrs dim_attrs(int64_t dim) {
  Attrs a;
  a.i[0] = dim;
  return a;
}

Tensor cumulative(OpId op, const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  Attrs a = dim_attrs(dim);
  if (dtype) {
    a.dtype = *dtype;
    a.has_dtype = true;
  }
  return dispatch1(op, a, {x});
}

std::tuple<Tensor, Tensor> two(TensorList r) { return {std::move(r[0]), std::move(r[1])}; }

// cummax/cummin in ember ops (what backends without a kernel of their own run): a log-step
// scan of (value, index) pairs under torch's rule — the later element takes over when it is NaN,
// or when it ties or beats the earlier one and that one is not NaN. The rule keeps the greatest
// (least) pair in an order with NaN on top and later positions winning ties, so it is
// associative and the steps may combine pairs of any span. Values are selected, never computed.
TensorList cum_extreme(const Attrs& a, std::span<const Tensor> in, bool is_max) {
  const Tensor& x = in[0];
  const TensorOptions i64{DType::I64, x.device()};
  if (x.dim() == 0) return {x.clone(), zeros({}, i64)};
  const int64_t dim = wrap_dim(a.i[0], x.dim(), is_max ? "cummax" : "cummin"), n = x.size(dim);
  Shape along(size_t(x.dim()), 1);
  along[size_t(dim)] = n;
  Tensor v = x, idx = broadcast_to(arange(n, i64).reshape(along), x.shape()).contiguous();
  const bool floating = is_floating(x.dtype());
  for (int64_t s = 1; s < n; s *= 2) {
    const Tensor ev = v.narrow(dim, 0, n - s), ei = idx.narrow(dim, 0, n - s);
    const Tensor lv = v.narrow(dim, s, n - s), li = idx.narrow(dim, s, n - s);
    Tensor take = is_max ? ge(lv, ev) : le(lv, ev);
    if (floating) take = logical_or(isnan(lv), logical_and(logical_not(isnan(ev)), take));
    v = cat({v.narrow(dim, 0, s), where(take, lv, ev)}, dim);
    idx = cat({idx.narrow(dim, 0, s), where(take, li, ei)}, dim);
  }
  return {v.is_contiguous() ? v : v.contiguous(), idx};
}
TensorList dec_cummax(const Attrs& a, std::span<const Tensor> in) {
  return cum_extreme(a, in, true);
}
TensorList dec_cummin(const Attrs& a, std::span<const Tensor> in) {
  return cum_extreme(a, in, false);
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return cumulative(OpId::cumsum, x, dim, dtype);
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return cumulative(OpId::cumprod, x, dim, dtype);
}
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) {
  return two(dispatch(OpId::cummax, dim_attrs(dim), {x}));
}
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) {
  return two(dispatch(OpId::cummin, dim_attrs(dim), {x}));
}
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  Attrs a = dim_attrs(dim);
  a.b[0] = descending;
  return two(dispatch(OpId::sort, a, {x}));
}
Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  Attrs a = dim_attrs(dim);
  a.b[0] = descending;
  return dispatch1(OpId::argsort, a, {x});
}
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  Attrs a = dim_attrs(dim);
  a.i[1] = k;
  a.b[0] = largest;
  a.b[1] = sorted;
  return two(dispatch(OpId::topk, a, {x}));
}
std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  Attrs a = dim_attrs(dim);
  a.i[1] = k;
  a.b[0] = keepdim;
  return two(dispatch(OpId::kthvalue, a, {x}));
}
Tensor median(const Tensor& x) { return dispatch1(OpId::median, Attrs{}, {x}); }
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  Attrs a = dim_attrs(dim);
  a.b[0] = keepdim;
  a.b[1] = true;
  return two(dispatch(OpId::median, a, {x}));
}

namespace ops {
void register_scan_ops() {
  set_infer_for_category(OpCategory::Scan, infer_scan);
  op_def_mut(OpId::argsort).differentiable = false;
  op_def_mut(OpId::cummax).decompose = dec_cummax;
  op_def_mut(OpId::cummin).decompose = dec_cummin;
}
}  // namespace ops

}  // namespace ember

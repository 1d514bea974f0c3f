// Reductions: API, inference, registration (scans and order statistics live in scan.cpp).
// Attrs: ints dims (empty = all), b[0] keepdim.
//   sum, mean, prod: dtype/has_dtype (the input is cast to it first).
//   var, std: f[0] correction.  norm: f[0] p.
//   max, min, argmax, argmin: b[1] a dim was given, i[0] that dim. max/min with a dim return
//   (values, int64 indices); without one a 0-d value. argmax/argmin without a dim index the
//   flattened tensor (keepdim then keeps every dim as 1).
#include "ember/ops/reduce.h"

#include "ember/backends/backend.h"
#include "ember/ops/common.h"

namespace ember {
namespace ops {
void register_scan_ops();
}

namespace {

// Ops without an identity (max, argmax, median, ...) refuse to reduce a dim of size 0.
void require_nonempty_dims(const Tensor& x, const Shape& dims, const char* name) {
  for (int64_t d : dims)
    if (x.shape()[size_t(d)] == 0)
      detail::throw_index(name, "expected reduction dim " + std::to_string(d) +
                                    " to have non-zero size, found 0 (the operation has no "
                                    "identity)");
}

void infer_arg_reduce(OpId op, const Attrs& a, const Tensor& x, MetaList& out) {
  const char* name = op_name(op);
  const bool arg = op == OpId::argmax || op == OpId::argmin;
  if (arg && x.dtype() == DType::Bool)
    detail::throw_dtype(name, "expected a numeric dtype (not bool), found bool");
  if (!a.b[1]) {
    if (x.numel() == 0)
      detail::throw_index(name, "expected a non-empty input when no dim is given, found shape " +
                                    shape_str(x.shape()) + " (specify the reduction dim)");
    Shape s = arg && a.b[0] ? Shape(size_t(x.dim()), 1) : Shape{};
    out.add(s, arg ? DType::I64 : x.dtype());
    return;
  }
  int64_t dim = wrap_dim(a.i[0], x.dim(), name);
  Shape dims = x.dim() ? Shape{dim} : Shape{};
  require_nonempty_dims(x, dims, name);
  Shape s = ops::reduced_shape(x.shape(), dims, a.b[0]);
  if (!arg) out.add(s, x.dtype());
  out.add(s, DType::I64);
}

void infer_reduce(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  ops::require_defined(in[0], name);
  const Tensor& x = in[0];
  const DType d = x.dtype();
  if (op == OpId::max || op == OpId::min || op == OpId::argmax || op == OpId::argmin)
    return infer_arg_reduce(op, a, x, out);
  Shape dims = ops::reduce_dims(a.ints, x.dim(), name);
  Shape shape = ops::reduced_shape(x.shape(), dims, a.b[0]);
  switch (op) {
    case OpId::sum: case OpId::prod: {
      DType r = a.has_dtype ? a.dtype : (is_integral(d, true) ? DType::I64 : d);
      out.add(shape, r);
      return;
    }
    case OpId::mean: {
      DType r = a.has_dtype ? a.dtype : d;
      if (!is_floating(r) && !is_complex(r))
        detail::throw_dtype(name, "could not infer output dtype: expected a floating input or "
                                  "dtype, found " + std::string(dtype_name(r)));
      out.add(shape, r);
      return;
    }
    case OpId::amax: case OpId::amin:
      require_nonempty_dims(x, dims, name);
      out.add(shape, d);
      return;
    // torch keeps uint8 for any/all (a legacy of uint8 masks); everything else gives bool.
    case OpId::any: case OpId::all: out.add(shape, d == DType::U8 ? d : DType::Bool); return;
    case OpId::var: case OpId::std: case OpId::norm:  // real for complex x, as torch's
      ops::require_dtype(name, d, kFloatDTypes | kComplexDTypes, "a floating or complex dtype");
      out.add(shape, is_complex(d) ? complex_part_dtype(d) : d);
      return;
    case OpId::logsumexp: out.add(shape, ops::float_result(d)); return;
    case OpId::count_nonzero: out.add(shape, DType::I64); return;
    default: out.add(shape, d); return;
  }
}

Tensor reduce(OpId op, const Tensor& x, const Shape& dims, bool keepdim,
              std::optional<DType> dtype = {}) {
  Attrs a;
  a.ints = dims;
  a.b[0] = keepdim;
  if (dtype) {
    a.dtype = *dtype;
    a.has_dtype = true;
  }
  return dispatch1(op, a, {x});
}

Attrs dim_attrs(std::optional<int64_t> dim, bool keepdim) {
  Attrs a;
  a.b[0] = keepdim;
  a.b[1] = dim.has_value();
  a.i[0] = dim.value_or(0);
  return a;
}

std::tuple<Tensor, Tensor> two(TensorList r) { return {std::move(r[0]), std::move(r[1])}; }

}  // namespace

Tensor sum(const Tensor& x, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  return reduce(OpId::sum, x, dims, keepdim, dtype);
}
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  return reduce(OpId::mean, x, dims, keepdim, dtype);
}
Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim, std::optional<DType> dtype) {
  return reduce(OpId::prod, x, dim ? Shape{*dim} : Shape{}, keepdim, dtype);
}
Tensor max(const Tensor& x) { return dispatch1(OpId::max, dim_attrs({}, false), {x}); }
Tensor min(const Tensor& x) { return dispatch1(OpId::min, dim_attrs({}, false), {x}); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return two(dispatch(OpId::max, dim_attrs(dim, keepdim), {x}));
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return two(dispatch(OpId::min, dim_attrs(dim, keepdim), {x}));
}
Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce(OpId::amax, x, dims, keepdim);
}
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce(OpId::amin, x, dims, keepdim);
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return dispatch1(OpId::argmax, dim_attrs(dim, keepdim), {x});
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return dispatch1(OpId::argmin, dim_attrs(dim, keepdim), {x});
}
Tensor any(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce(OpId::any, x, dims, keepdim);
}
Tensor all(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce(OpId::all, x, dims, keepdim);
}
Tensor var(const Tensor& x, const Shape& dims, double correction, bool keepdim) {
  Attrs a;
  a.ints = dims;
  a.b[0] = keepdim;
  a.f[0] = correction;
  return dispatch1(OpId::var, a, {x});
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, const Shape& dims, double correction,
                                    bool keepdim) {
  return {var(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, const Shape& dims, double correction,
                                    bool keepdim) {
  return {std(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}
Tensor std(const Tensor& x, const Shape& dims, double correction, bool keepdim) {
  Attrs a;
  a.ints = dims;
  a.b[0] = keepdim;
  a.f[0] = correction;
  return dispatch1(OpId::std, a, {x});
}
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce(OpId::logsumexp, x, dims, keepdim);
}
Tensor norm(const Tensor& x, double p, const Shape& dims, bool keepdim) {
  Attrs a;
  a.ints = dims;
  a.b[0] = keepdim;
  a.f[0] = p;
  return dispatch1(OpId::norm, a, {x});
}
Tensor count_nonzero(const Tensor& x, const Shape& dims) {
  return reduce(OpId::count_nonzero, x, dims, false);
}

namespace ops {
void register_reduce_ops() {
  set_infer_for_category(OpCategory::Reduce, infer_reduce);
  for (OpId op : {OpId::argmax, OpId::argmin, OpId::any, OpId::all, OpId::count_nonzero})
    op_def_mut(op).differentiable = false;
  register_scan_ops();
}
}  // namespace ops

}  // namespace ember

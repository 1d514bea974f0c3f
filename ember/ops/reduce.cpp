// Reductions: API, inference, registration.
// Attrs: ints dims (empty = all), b[0] keepdim, dtype/has_dtype (sum, mean, prod).
#include "ember/ops/reduce.h"

#include "ember/backends/backend.h"
#include "ember/ops/common.h"

namespace ember {
namespace {

void infer_reduce(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  ops::require_defined(in[0], name);
  const Tensor& x = in[0];
  Shape dims = ops::reduce_dims(a.ints, x.dim(), name);
  Shape shape = ops::reduced_shape(x.shape(), dims, a.b[0]);
  DType d = x.dtype();
  switch (op) {
    case OpId::sum: case OpId::prod: {
      DType r = a.has_dtype ? a.dtype : (is_integral(d, true) ? DType::I64 : d);
      out.add(shape, r);
      return;
    }
    case OpId::mean: {
      DType r = a.has_dtype ? a.dtype : d;
      if (!is_floating(r))
        detail::throw_dtype(name, "could not infer output dtype: expected a floating input or "
                                  "dtype, found " + std::string(dtype_name(r)));
      out.add(shape, r);
      return;
    }
    case OpId::amax: case OpId::amin: {
      for (int64_t dd : dims)
        if (x.shape()[size_t(dd)] == 0)
          detail::throw_index(name, "cannot reduce over dim " + std::to_string(dd) +
                                        " of size 0 (the operation has no identity)");
      if (x.numel() == 0 && dims.empty() && x.dim() == 0)
        detail::throw_index(name, "cannot reduce an empty tensor");
      out.add(shape, d);
      return;
    }
    case OpId::any: case OpId::all: out.add(shape, DType::Bool); return;
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
Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce(OpId::amax, x, dims, keepdim);
}
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce(OpId::amin, x, dims, keepdim);
}
Tensor any(const Tensor& x, const Shape& dims, bool keepdim) { return reduce(OpId::any, x, dims, keepdim); }
Tensor all(const Tensor& x, const Shape& dims, bool keepdim) { return reduce(OpId::all, x, dims, keepdim); }

namespace ops {
void register_reduce_ops() {
  set_infer_for_category(OpCategory::Reduce, infer_reduce);
  for (OpId op : {OpId::argmax, OpId::argmin, OpId::any, OpId::all, OpId::count_nonzero})
    op_def_mut(op).differentiable = false;
}
}  // namespace ops

}  // namespace ember

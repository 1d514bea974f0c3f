// Index ops: API, inference, registration (slice/select/narrow live with the views).
// Attrs: index_select, gather, scatter, scatter_add, scatter_reduce, index_add: i[0] dim.
// scatter: inputs (x, index, src), or (x, index) with s[0] the value. scatter_reduce: str reduce
// ("sum", "prod", "mean", "amax", "amin"), b[0] include_self. index_add: s[0] alpha.
// index_put: inputs (x, values, indices...) where an undefined index means ":", b[0]
// accumulate. masked_fill: inputs (x, mask) with s[0] the value, or (x, mask, 0-d value).
// one_hot: i[0] num_classes (-1: max + 1). masked_select, nonzero, take: no attrs.
// A dim of -1 in an inferred shape means the kernel decides it from the data.
#include "ember/ops/modes.h"
#include "ember/ops/index.h"

#include <algorithm>
#include <cmath>

#include "ember/backends/backend.h"
#include "ember/ops/common.h"

namespace ember {
namespace {

using ops::require_defined;

// gather/scatter treat a 0-d operand as 1-d of size 1, like torch.
int64_t rank(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
int64_t size_at(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.shape()[size_t(d)]; }
std::string dt(DType d) { return std::string(dtype_name(d)); }

void expect_inputs(const char* op, std::span<const Tensor> in, size_t lo, size_t hi) {
  if (in.size() < lo || in.size() > hi)
    detail::throw_value(op, "expected " + std::to_string(lo) +
                                (hi > lo ? " to " + std::to_string(hi) : std::string()) +
                                " inputs, found " + std::to_string(in.size()));
}

void require_index(const char* op, const Tensor& idx, bool allow_i32) {
  require_defined(idx, op, "index");
  if (idx.dtype() == DType::I64 || (allow_i32 && idx.dtype() == DType::I32)) return;
  detail::throw_dtype(op, std::string("expected an int64") + (allow_i32 ? " or int32" : "") +
                              " index, found " + dt(idx.dtype()));
}

void require_same_dtype(const char* op, const Tensor& x, const Tensor& src, const char* what) {
  if (x.dtype() != src.dtype())
    detail::throw_dtype(op, std::string("expected ") + what + " of the input's dtype " +
                                dt(x.dtype()) + ", found " + dt(src.dtype()));
}

// index/src of gather and scatter: same rank as x; index no larger than src anywhere, nor than
// x outside `dim`.
void check_gather_shapes(const char* op, const Tensor& x, const Tensor& index, const Tensor* src,
                         int64_t dim) {
  if (rank(index) != rank(x))
    detail::throw_shape(op, "expected an index with as many dims as the input (" +
                                std::to_string(x.dim()) + "), found shape " +
                                shape_str(index.shape()));
  if (src && rank(*src) != rank(x))
    detail::throw_shape(op, "expected src with as many dims as the input (" +
                                std::to_string(x.dim()) + "), found shape " +
                                shape_str(src->shape()));
  if (index.numel() == 0) return;
  for (int64_t d = 0; d < rank(x); ++d) {
    if (d != dim && size_at(index, d) > size_at(x, d))
      detail::throw_shape(op, "index of shape " + shape_str(index.shape()) +
                                  " is larger than the input " + shape_str(x.shape()) + " at dim " +
                                  std::to_string(d) + " (only dim " + std::to_string(dim) +
                                  " may be larger)");
    if (src && size_at(index, d) > size_at(*src, d))
      detail::throw_shape(op, "index of shape " + shape_str(index.shape()) +
                                  " is larger than src " + shape_str(src->shape()) + " at dim " +
                                  std::to_string(d));
  }
}

// index_select / index_add: a 0-d or 1-d int32/int64 index along `dim`.
void check_vector_index(const char* op, const Tensor& index) {
  require_index(op, index, true);
  if (index.dim() > 1)
    detail::throw_shape(op, "expected a 0-d or 1-d index, found shape " +
                                shape_str(index.shape()));
}

void check_scalar_fits(const char* op, DType d, Scalar v) {
  if (is_integral(d, true) && v.is_floating() && !std::isfinite(v.to_double()))
    detail::throw_value(op, "cannot fill a " + dt(d) + " tensor with " +
                                std::to_string(v.to_double()));
}

void infer_gather_family(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  bool scatter_like = op == OpId::scatter || op == OpId::scatter_add || op == OpId::scatter_reduce;
  expect_inputs(name, in, op == OpId::scatter ? 2 : scatter_like || op == OpId::index_add ? 3 : 2,
                scatter_like || op == OpId::index_add ? 3 : 2);
  require_defined(in[0], name);
  const Tensor& x = in[0];
  int64_t dim = wrap_dim(a.i[0], x.dim(), name);
  switch (op) {
    case OpId::index_select: {
      check_vector_index(name, in[1]);
      Shape s = x.shape();
      if (x.dim() > 0) s[size_t(dim)] = in[1].numel();
      out.add(s, x.dtype());
      return;
    }
    case OpId::gather:
      require_index(name, in[1], false);
      check_gather_shapes(name, x, in[1], nullptr, dim);
      out.add(in[1].shape(), x.dtype());
      return;
    case OpId::index_add: {
      check_vector_index(name, in[1]);
      require_defined(in[2], name, "source");
      const Tensor& src = in[2];
      require_same_dtype(name, x, src, "a source");
      Shape want = x.shape();
      if (x.dim() > 0) want[size_t(dim)] = in[1].numel();
      bool ok = x.dim() == 0 ? src.dim() <= 1 && src.numel() == in[1].numel() : src.shape() == want;
      if (!ok)
        detail::throw_shape(name, "expected a source of shape " + shape_str(want) + ", found " +
                                      shape_str(src.shape()));
      out.add(x.shape(), x.dtype());
      return;
    }
    default: {  // scatter, scatter_add, scatter_reduce
      require_index(name, in[1], false);
      const Tensor* src = nullptr;
      if (in.size() > 2) {
        require_defined(in[2], name, "src");
        src = &in[2];
        require_same_dtype(name, x, *src, "src");
      } else {
        check_scalar_fits(name, x.dtype(), a.s[0]);
      }
      check_gather_shapes(name, x, in[1], src, dim);
      if (op == OpId::scatter_reduce) {
        const auto r = ops::mode_of(name, a.mode, ops::ScatterReduce::Amin);
        if (r == ops::ScatterReduce::Mean && x.dtype() == DType::Bool)
          detail::throw_dtype(name, "reduce 'mean' is not supported for bool");
      }
      out.add(x.shape(), x.dtype());
      return;
    }
  }
}

bool is_mask(DType d) { return d == DType::Bool || d == DType::U8; }

void infer_index_put(OpId op, const Attrs&, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  expect_inputs(name, in, 2, size_t(-1));
  require_defined(in[0], name);
  require_defined(in[1], name, "values");
  const Tensor& x = in[0];
  require_same_dtype(name, x, in[1], "values");
  int64_t consumed = 0;
  for (size_t k = 2; k < in.size(); ++k) {
    const Tensor& t = in[k];
    if (!t.defined()) {
      ++consumed;
      continue;
    }
    if (is_mask(t.dtype())) {
      // A k-dim mask covers the next k dims of x and must match them exactly.
      for (int64_t j = 0; j < t.dim(); ++j) {
        int64_t d = consumed + j;
        if (d >= x.dim()) break;
        if (t.shape()[size_t(j)] != x.shape()[size_t(d)])
          detail::throw_shape(name, "mask of shape " + shape_str(t.shape()) + " at index " +
                                        std::to_string(k - 2) + " does not match the indexed " +
                                        "tensor " + shape_str(x.shape()) + " at dim " +
                                        std::to_string(d));
      }
      consumed += t.dim();
    } else if (t.dtype() == DType::I64 || t.dtype() == DType::I32) {
      ++consumed;
    } else {
      detail::throw_dtype(name, "indices must be int64, int32, bool or uint8 tensors, found " +
                                    dt(t.dtype()) + " at index " + std::to_string(k - 2));
    }
  }
  if (consumed > x.dim())
    detail::throw_index(name, "too many indices for a tensor of " + std::to_string(x.dim()) +
                                  " dims (" + std::to_string(consumed) + " given)");
  out.add(x.shape(), x.dtype());
}

void require_bool_mask(const char* op, const Tensor& mask) {
  require_defined(mask, op, "mask");
  if (mask.dtype() != DType::Bool)
    detail::throw_dtype(op, "expected a bool mask, found " + dt(mask.dtype()));
}

void infer_masked(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  expect_inputs(name, in, 2, op == OpId::masked_fill ? 3 : 2);
  require_defined(in[0], name);
  require_bool_mask(name, in[1]);
  Shape s = broadcast_shapes(in[0].shape(), in[1].shape(), name);
  if (op == OpId::masked_select) {
    out.add({-1}, in[0].dtype());
    return;
  }
  if (in.size() > 2) {
    require_defined(in[2], name, "value");
    if (in[2].dim() != 0)
      detail::throw_shape(name, "expected a 0-d value tensor, found shape " +
                                    shape_str(in[2].shape()));
  } else {
    check_scalar_fits(name, in[0].dtype(), a.s[0]);
  }
  out.add(s, in[0].dtype());
}

void infer_misc(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  expect_inputs(name, in, op == OpId::take ? 2 : 1, op == OpId::take ? 2 : 1);
  require_defined(in[0], name);
  const Tensor& x = in[0];
  switch (op) {
    case OpId::nonzero: out.add({-1, x.dim()}, DType::I64); return;
    case OpId::take:
      require_index(name, in[1], false);
      out.add(in[1].shape(), x.dtype());
      return;
    default: {  // one_hot
      if (x.dtype() != DType::I64)
        detail::throw_dtype(name, "expected an int64 tensor of class indices, found " +
                                      dt(x.dtype()));
      int64_t n = a.i[0];
      if (n < -1)
        detail::throw_value(name, "num_classes must be -1 or non-negative, found " +
                                      std::to_string(n));
      if (x.numel() == 0 && n <= 0)
        detail::throw_value(name, "cannot infer the number of classes of an empty tensor "
                                  "(pass num_classes > 0)");
      Shape s = x.shape();
      s.push_back(n);
      out.add(s, DType::I64);
      return;
    }
  }
}

Attrs dim_attrs(int64_t dim) {
  Attrs a;
  a.i[0] = dim;
  return a;
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return dispatch1(OpId::index_select, dim_attrs(dim), {x, index});
}
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  return dispatch1(OpId::gather, dim_attrs(dim), {x, index});
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return dispatch1(OpId::scatter, dim_attrs(dim), {x, index, src});
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  Attrs a = dim_attrs(dim);
  a.s[0] = value;
  return dispatch1(OpId::scatter, a, {x, index});
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return dispatch1(OpId::scatter_add, dim_attrs(dim), {x, index, src});
}
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
  Attrs a = dim_attrs(dim);
  a.mode = uint8_t(ops::parse_scatter_reduce("scatter_reduce", reduce));
  a.b[0] = include_self;
  return dispatch1(OpId::scatter_reduce, a, {x, index, src});
}
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                 Scalar alpha) {
  Attrs a = dim_attrs(dim);
  a.s[0] = alpha;
  return dispatch1(OpId::index_add, a, {x, index, src});
}
Tensor index_put(const Tensor& x, const TensorList& indices, const Tensor& values,
                 bool accumulate) {
  Attrs a;
  a.b[0] = accumulate;
  TensorList in;
  in.reserve(indices.size() + 2);
  in.push_back(x);
  in.push_back(values);
  in.insert(in.end(), indices.begin(), indices.end());
  return dispatch(OpId::index_put, a, in).front();
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  Attrs a;
  a.s[0] = value;
  return dispatch1(OpId::masked_fill, a, {x, mask});
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  return dispatch1(OpId::masked_fill, {}, {x, mask, value});
}
Tensor masked_select(const Tensor& x, const Tensor& mask) {
  return dispatch1(OpId::masked_select, {}, {x, mask});
}
Tensor nonzero(const Tensor& x) { return dispatch1(OpId::nonzero, {}, {x}); }
Tensor take(const Tensor& x, const Tensor& index) {
  return dispatch1(OpId::take, {}, {x, index});
}
Tensor one_hot(const Tensor& x, int64_t num_classes) {
  return dispatch1(OpId::one_hot, dim_attrs(num_classes), {x});
}

namespace ops {
void register_index_decompositions();  // index_decompose.cpp
void register_index_ops() {
  register_index_decompositions();
  for (OpId op : {OpId::index_select, OpId::gather, OpId::scatter, OpId::scatter_add,
                  OpId::scatter_reduce, OpId::index_add})
    op_def_mut(op).infer = infer_gather_family;
  op_def_mut(OpId::index_put).infer = infer_index_put;
  op_def_mut(OpId::masked_fill).infer = infer_masked;
  op_def_mut(OpId::masked_select).infer = infer_masked;
  op_def_mut(OpId::nonzero).infer = infer_misc;
  op_def_mut(OpId::take).infer = infer_misc;
  op_def_mut(OpId::one_hot).infer = infer_misc;
  op_def_mut(OpId::nonzero).differentiable = false;
  op_def_mut(OpId::one_hot).differentiable = false;
}
}  // namespace ops

}  // namespace ember

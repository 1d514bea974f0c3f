// VJP rules: shape (views, layout, indexing). This file holds the registration, the helpers and
// the view rules; layout and indexing live in rules_shape_layout.cpp and rules_shape_index*.cpp.
// A view's gradient is g put back into the input's shape: reshaped, permuted back, summed over
// broadcast dims, or embedded into zeros where the view took only part of the input.
#include <algorithm>

#include "ember/autodiff/rules_shape.h"

namespace ember::autodiff {
namespace shape_rules {

Tensor fit_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if (g.dim() != int64_t(shape.size())) return reshape(g, shape);  // 0-d against [1]
  Shape p;
  for (int64_t d = g.dim() - 1; d >= 0; --d) {
    p.push_back(0);
    p.push_back(shape[size_t(d)] - g.size(d));
  }
  return pad(g, p);
}

Tensor crop_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  if (x.dim() != int64_t(shape.size())) return reshape(x, shape);  // 0-d against [1]
  Tensor r = x;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (r.size(d) != shape[size_t(d)]) r = narrow(r, d, 0, shape[size_t(d)]);
  return r;
}

Tensor embed(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t step) {
  const int64_t len = g.size(dim), n = shape[size_t(dim)];
  if (len == 0) return zeros_as(shape, g);
  if (step == 1) {  // a constant pad of the one dim; cheaper than a scatter
    Shape p(2 * size_t(g.dim() - dim), 0);
    p[p.size() - 2] = start;
    p[p.size() - 1] = n - start - len;
    return pad(g, p);
  }
  Tensor idx = arange(start, start + len * step, step, {DType::I64, g.device()});
  return index_add(zeros_as(shape, g), dim, idx, g);
}

}  // namespace shape_rules

namespace {
using namespace shape_rules;

// reshape, view, flatten, unflatten, squeeze, unsqueeze: same elements, another shape.
TensorList vjp_reshape(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  return {reshape(c.grad(0), c.input(0).shape())};
}

TensorList vjp_permute(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  const int64_t nd = c.input(0).dim();
  Shape inv(size_t(nd), 0);
  for (int64_t i = 0; i < nd; ++i)
    inv[size_t(wrap_dim(c.attrs.ints[size_t(i)], nd, "permute"))] = i;
  return {permute(c.grad(0), inv)};
}

TensorList vjp_transpose(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  return {transpose(c.grad(0), c.attrs.i[0], c.attrs.i[1])};
}

TensorList vjp_movedim(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  return {movedim(c.grad(0), c.attrs.ints2, c.attrs.ints)};
}

// expand, broadcast_to: every copy of an element adds to its gradient.
TensorList vjp_expand(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  return {sum_to(c.grad(0), c.input(0).shape())};
}

TensorList vjp_slice(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  const Tensor& x = c.input(0);
  const int64_t d = wrap_dim(c.attrs.i[0], x.dim(), "slice"), n = x.size(d);
  int64_t s = c.attrs.b[0] ? c.attrs.i[1] : 0;
  if (s < 0) s += n;
  s = std::clamp<int64_t>(s, 0, n);
  return {embed(c.grad(0), x.shape(), d, s, c.attrs.i[3])};
}

TensorList vjp_select(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  const Tensor& x = c.input(0);
  const int64_t d = wrap_dim(c.attrs.i[0], x.dim(), "select");
  const int64_t i = c.attrs.i[1] < 0 ? c.attrs.i[1] + x.size(d) : c.attrs.i[1];
  return {embed(unsqueeze(c.grad(0), d), x.shape(), d, i, 1)};
}

TensorList vjp_narrow(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  const Tensor& x = c.input(0);
  const int64_t d = wrap_dim(c.attrs.i[0], x.dim(), "narrow");
  const int64_t s = c.attrs.i[1] < 0 ? c.attrs.i[1] + x.size(d) : c.attrs.i[1];
  return {embed(c.grad(0), x.shape(), d, s, 1)};
}

// diagonal: the two dims move last and merge into one, where the diagonal's elements sit at
// flat positions (i + row0) * n1 + (i + col0); g is added there, then everything moves back.
TensorList vjp_diagonal(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  const Tensor& x = c.input(0);
  const Tensor& g = c.grad(0);
  const int64_t nd = x.dim(), off = c.attrs.i[0];
  const int64_t d0 = wrap_dim(c.attrs.i[1], nd, "diagonal");
  const int64_t d1 = wrap_dim(c.attrs.i[2], nd, "diagonal");
  const int64_t len = g.size(-1);
  if (len == 0) return {zeros_as(x.shape(), g)};
  const int64_t n0 = x.size(d0), n1 = x.size(d1);
  const int64_t row0 = std::max<int64_t>(-off, 0), col0 = std::max<int64_t>(off, 0);
  Tensor idx = arange(len, {DType::I64, g.device()}) * (n1 + 1) + (row0 * n1 + col0);
  Shape flat;  // x's other dims, then n0 * n1
  for (int64_t d = 0; d < nd; ++d)
    if (d != d0 && d != d1) flat.push_back(x.size(d));
  Shape moved = flat;
  moved.push_back(n0);
  moved.push_back(n1);
  flat.push_back(n0 * n1);
  Tensor r = index_add(zeros_as(flat, g), -1, idx, g);
  return {movedim(reshape(r, moved), {nd - 2, nd - 1}, {d0, d1})};
}

TensorList vjp_contiguous(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  return {c.grad(0)};
}

// copy(x): a clone. copy(dst, src): src (broadcast, cast) overwrites dst, so dst gets nothing.
TensorList vjp_copy(const VjpCtx& c) {
  if (c.inputs.size() == 1) return {wants(c, 0) ? c.grad(0) : Tensor()};
  const Tensor& src = c.input(1);
  if (!wants(c, 1)) return {Tensor(), Tensor()};
  return {Tensor(), like(sum_to(c.grad(0), src.shape()), src)};
}

}  // namespace

namespace shape_rules {
void register_views() {
  for (OpId op : {OpId::reshape, OpId::view, OpId::flatten, OpId::unflatten, OpId::squeeze,
                  OpId::unsqueeze})
    set_vjp(op, vjp_reshape);
  set_vjp(OpId::permute, vjp_permute);
  set_vjp(OpId::transpose, vjp_transpose);
  set_vjp(OpId::movedim, vjp_movedim);
  set_vjp(OpId::expand, vjp_expand);
  set_vjp(OpId::broadcast_to, vjp_expand);
  set_vjp(OpId::slice, vjp_slice);
  set_vjp(OpId::select, vjp_select);
  set_vjp(OpId::narrow, vjp_narrow);
  set_vjp(OpId::diagonal, vjp_diagonal);
  set_vjp(OpId::contiguous, vjp_contiguous);
  set_vjp(OpId::copy, vjp_copy);
}
}  // namespace shape_rules

void register_rules_shape() {
  shape_rules::register_views();
  shape_rules::register_layout();
  shape_rules::register_index();
  shape_rules::register_index_put();
}

}  // namespace ember::autodiff

// Layout ops that join or split tensors: cat, stack, split, chunk, unbind, meshgrid (API,
// inference, decompositions). split/chunk/unbind/meshgrid return views, like torch, through
// decompositions into view ops; stack lowers to cat. The copying layout ops live in
// layout_copy.cpp, the view ops in views.cpp.
// Attrs: cat, stack: inputs the tensors, i[0] dim. split: i[0] split size, i[1] dim; or b[0] =
// true and ints the sizes. chunk: i[0] chunks, i[1] dim. unbind: i[0] dim. meshgrid: inputs the
// tensors, str indexing ("ij" or "xy").
#include "ember/ops/modes.h"
#include "ember/ops/layout.h"

#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/ops/index.h"

namespace ember {
namespace {

using ops::require_defined;

void require_list(const char* op, std::span<const Tensor> in) {
  if (in.empty()) detail::throw_value(op, "expected a non-empty list of tensors");
  for (const Tensor& t : in) require_defined(t, op);
}

DType promote_all(std::span<const Tensor> in) {
  DType d = in[0].dtype();
  for (const Tensor& t : in) d = promote_types(d, t.dtype());
  return d;
}

std::string at(size_t i) { return " at position " + std::to_string(i); }

constexpr int64_t kMaxEmptyChunks = int64_t(1) << 16;

// torch skips 1-d empty tensors in cat (a legacy of "empty" meaning shape [0]).
bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

void infer_cat(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  require_list(name, in);
  DType d = promote_all(in);
  const Tensor* ref = nullptr;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].dim() == 0)
      detail::throw_shape(name, "a 0-d tensor" + at(i) + " cannot be concatenated");
    if (!ref && !skipped_in_cat(in[i])) ref = &in[i];
  }
  if (!ref) {
    out.add({0}, d);
    return;
  }
  const int64_t dim = wrap_dim(a.i[0], ref->dim(), name);
  Shape s = ref->shape();
  s[size_t(dim)] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    if (skipped_in_cat(t)) continue;
    if (t.dim() != ref->dim())
      detail::throw_shape(name, "expected tensors with " + std::to_string(ref->dim()) +
                                    " dims, found shape " + shape_str(t.shape()) + at(i));
    for (int64_t k = 0; k < t.dim(); ++k)
      if (k != dim && t.size(k) != ref->size(k))
        detail::throw_shape(name, "sizes must match except in dim " + std::to_string(dim) +
                                      ": expected " + shape_str(ref->shape()) + ", found " +
                                      shape_str(t.shape()) + at(i));
    s[size_t(dim)] = checked_add(s[size_t(dim)], t.size(dim), name, "the concatenated size");
  }
  out.add(s, d);
}

void infer_stack(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  require_list(name, in);
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].shape() != in[0].shape())
      detail::throw_shape(name, "expected tensors of equal shape, found " +
                                    shape_str(in[0].shape()) + at(0) + " and " +
                                    shape_str(in[i].shape()) + at(i));
  const int64_t dim = wrap_dim(a.i[0], in[0].dim() + 1, name);
  Shape s = in[0].shape();
  s.insert(size_t(dim), int64_t(in.size()));
  out.add(s, promote_all(in));
}

// split / chunk / unbind: the outputs are views whose count depends on the attributes.
void infer_split(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  require_defined(in[0], name);
  const Tensor& x = in[0];
  out.variadic = true;
  if (op == OpId::unbind) {
    if (x.dim() == 0) detail::throw_index(name, "cannot unbind a 0-d tensor");
    wrap_dim(a.i[0], x.dim(), name);
    return;
  }
  if (x.dim() == 0)
    detail::throw_shape(name, "expected a tensor of at least 1 dim, found a 0-d one");
  const int64_t n = x.size(wrap_dim(a.i[1], x.dim(), name));
  if (op == OpId::chunk) {
    if (a.i[0] <= 0)
      detail::throw_value(name, "expected chunks > 0, found " + std::to_string(a.i[0]));
    // An empty dim gives `chunks` empty views (as torch does): bounded, as each is an output.
    if (n == 0 && a.i[0] > kMaxEmptyChunks)
      detail::throw_value(name, "an empty dim splits into at most " +
                                    std::to_string(kMaxEmptyChunks) + " chunks, found " +
                                    std::to_string(a.i[0]));
    return;
  }
  if (a.b[0]) {
    int64_t total = 0;
    for (int64_t s : a.ints) {
      if (s < 0)
        detail::throw_value(name, "expected non-negative sizes, found " + shape_str(a.ints));
      total = checked_add(total, s, name, "the sum of the sizes");
    }
    if (total != n)
      detail::throw_shape(name, "sizes " + shape_str(a.ints) + " must sum to the dim's size " +
                                    std::to_string(n));
    return;
  }
  if (a.i[0] < 0)
    detail::throw_value(name, "expected a non-negative split size, found " +
                                  std::to_string(a.i[0]));
  if (a.i[0] == 0 && n > 0)
    detail::throw_value(name, "split size 0 needs a dim of size 0, found size " +
                                  std::to_string(n));
}

void infer_meshgrid(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  require_list(name, in);
  ops::mode_of(name, a.mode, ops::MeshIndexing::XY);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].dim() > 1)
      detail::throw_shape(name, "expected 0-d or 1-d tensors, found shape " +
                                    shape_str(in[i].shape()) + at(i));
    if (in[i].dtype() != in[0].dtype())
      detail::throw_dtype(name, "expected tensors of one dtype, found " +
                                    std::string(dtype_name(in[0].dtype())) + " and " +
                                    std::string(dtype_name(in[i].dtype())) + at(i));
  }
  out.variadic = true;
}

TensorList d_stack(const Attrs& a, std::span<const Tensor> in) {
  const int64_t dim = wrap_dim(a.i[0], in[0].dim() + 1, "stack");
  TensorList parts;
  parts.reserve(in.size());
  for (const Tensor& t : in) parts.push_back(unsqueeze(t, dim));
  return {cat(parts, dim)};
}

TensorList views_by_sizes(const Tensor& x, int64_t dim, const Shape& sizes) {
  TensorList out;
  out.reserve(sizes.size());
  int64_t off = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(x, dim, off, s));
    off += s;
  }
  return out;
}

// torch's split: ceil(n / size) pieces (at least one), the last one possibly smaller.
Shape sizes_for_split(int64_t n, int64_t size) {
  if (size == 0) return {0};
  Shape s;
  for (int64_t off = 0; off < n; off += size) s.push_back(std::min(size, n - off));
  if (s.empty()) s.push_back(0);
  return s;
}

TensorList d_split(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const int64_t dim = wrap_dim(a.i[1], x.dim(), "split");
  return views_by_sizes(x, dim, a.b[0] ? a.ints : sizes_for_split(x.size(dim), a.i[0]));
}

TensorList d_chunk(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const int64_t dim = wrap_dim(a.i[1], x.dim(), "chunk");
  const int64_t n = x.size(dim), chunks = a.i[0];
  const int64_t size = n / chunks + (n % chunks != 0);  // ceil without overflow
  // An empty dim still gives `chunks` empty pieces, as in torch.
  if (n == 0) return views_by_sizes(x, dim, Shape(size_t(chunks), 0));
  return views_by_sizes(x, dim, sizes_for_split(n, size));
}

TensorList d_unbind(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const int64_t dim = wrap_dim(a.i[0], x.dim(), "unbind");
  TensorList out;
  for (int64_t i = 0; i < x.size(dim); ++i) out.push_back(select(x, dim, i));
  return out;
}

// Each grid is a broadcast view of its input: [.., n_i, ..] expanded to every input's size.
TensorList d_meshgrid(const Attrs& a, std::span<const Tensor> in) {
  std::vector<const Tensor*> ts;
  for (const Tensor& t : in) ts.push_back(&t);
  const bool swap = ops::MeshIndexing(a.mode) == ops::MeshIndexing::XY && ts.size() >= 2;  // "xy": the first two dims trade places
  if (swap) std::swap(ts[0], ts[1]);
  Shape shape;
  for (const Tensor* t : ts) shape.push_back(t->numel());
  TensorList grids;
  for (size_t i = 0; i < ts.size(); ++i) {
    Shape vs(ts.size(), 1);
    vs[i] = shape[i];
    grids.push_back(expand(reshape(*ts[i], vs), shape));
  }
  if (swap) std::swap(grids[0], grids[1]);
  return grids;
}

TensorList run(OpId op, const Attrs& a, std::span<const Tensor> in) { return dispatch(op, a, in); }

}  // namespace

Tensor cat(const TensorList& xs, int64_t dim) {
  Attrs a;
  a.i[0] = dim;
  return run(OpId::cat, a, xs).front();
}
Tensor stack(const TensorList& xs, int64_t dim) {
  Attrs a;
  a.i[0] = dim;
  return run(OpId::stack, a, xs).front();
}
TensorList split(const Tensor& x, int64_t size, int64_t dim) {
  Attrs a;
  a.i = {size, dim, 0, 0};
  return dispatch(OpId::split, a, {x});
}
TensorList split(const Tensor& x, const Shape& sizes, int64_t dim) {
  Attrs a;
  a.i[1] = dim;
  a.b[0] = true;
  a.ints = sizes;
  return dispatch(OpId::split, a, {x});
}
TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  Attrs a;
  a.i = {chunks, dim, 0, 0};
  return dispatch(OpId::chunk, a, {x});
}
TensorList unbind(const Tensor& x, int64_t dim) {
  Attrs a;
  a.i[0] = dim;
  return dispatch(OpId::unbind, a, {x});
}
TensorList meshgrid(const TensorList& xs, const std::string& indexing) {
  Attrs a;
  a.mode = uint8_t(ops::parse_mesh_indexing("meshgrid", indexing));
  return run(OpId::meshgrid, a, xs);
}

namespace ops {
void register_layout_copy_ops();  // layout_copy.cpp

void register_layout_ops() {
  op_def_mut(OpId::cat).infer = infer_cat;
  op_def_mut(OpId::stack).infer = infer_stack;
  op_def_mut(OpId::stack).decompose = d_stack;
  for (OpId op : {OpId::split, OpId::chunk, OpId::unbind}) op_def_mut(op).infer = infer_split;
  op_def_mut(OpId::split).decompose = d_split;
  op_def_mut(OpId::chunk).decompose = d_chunk;
  op_def_mut(OpId::unbind).decompose = d_unbind;
  op_def_mut(OpId::meshgrid).infer = infer_meshgrid;
  op_def_mut(OpId::meshgrid).decompose = d_meshgrid;
  register_layout_copy_ops();
}
}  // namespace ops

}  // namespace ember

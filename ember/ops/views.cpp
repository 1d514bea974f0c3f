// View ops (zero-copy): reshape, view, flatten, unflatten, permute, transpose, movedim, squeeze,
// unsqueeze, expand, broadcast_to, slice, select, narrow, diagonal; plus contiguous, copy/clone.
// Attrs: reshape/view/expand/broadcast_to: ints shape. flatten: i[0] start, i[1] end.
// unflatten: i[0] dim, ints sizes. permute: ints dims. transpose: i[0], i[1]. movedim: ints src,
// ints2 dst. squeeze: ints dims (empty = all). unsqueeze: i[0]. slice: i[0] dim, i[1] start,
// i[2] stop, i[3] step, b[0]/b[1] start/stop given. select: i[0] dim, i[1] index.
// narrow: i[0] dim, i[1] start, i[2] length. diagonal: i[0] offset, i[1] d0, i[2] d1.
#include "ember/ops/views.h"

#include <algorithm>

#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"

namespace ember::ops {

Shape infer_size(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer_at >= 0) detail::throw_shape(op, "only one dim can be -1, found " + shape_str(shape));
      infer_at = int64_t(i);
    } else if (out[i] < 0) {
      detail::throw_shape(op, "invalid size " + std::to_string(out[i]) + " in " + shape_str(shape));
    } else if (__builtin_mul_overflow(known, out[i], &known)) {
      detail::throw_shape(op, "shape " + shape_str(shape) + " is invalid for input of size " +
                                  std::to_string(numel) + " (its sizes overflow int64)");
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      detail::throw_shape(op, "shape " + shape_str(shape) + " is invalid for input of size " +
                                  std::to_string(numel));
    out[size_t(infer_at)] = numel / known;
  } else if (known != numel) {
    detail::throw_shape(op, "shape " + shape_str(shape) + " is invalid for input of size " +
                                std::to_string(numel));
  }
  return out;
}

std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& to) {
  // torch's computeStride: walk chunks of old dims that are contiguous among themselves.
  Shape out(to.size());
  if (shape.empty()) return Shape(to.size(), 1);  // a 0-d tensor views as any all-1 shape
  if (numel_of(shape) == 0) return contiguous_strides(to);
  int64_t view_d = int64_t(to.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[size_t(d)];
    if (d == 0 || (shape[size_t(d - 1)] != 1 &&
                   strides[size_t(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || to[size_t(view_d)] == 1)) {
        out[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= to[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

namespace {

int64_t wrap(int64_t d, const Tensor& x, const char* op) { return wrap_dim(d, x.dim(), op); }

}  // namespace

Geometry view_geometry(OpId op, const Attrs& a, const Tensor& x) {
  const char* name = op_name(op);
  const Shape& xs = x.shape();
  const Shape& st = x.strides();
  const int64_t nd = x.dim();
  Geometry g{xs, st, x.offset()};
  switch (op) {
    case OpId::reshape: case OpId::view: {
      g.shape = infer_size(a.ints, x.numel(), name);
      auto s = view_strides(xs, st, g.shape);
      if (!s) {
        if (op == OpId::view)
          detail::throw_shape(name, "a view of shape " + shape_str(g.shape) +
                                        " is not compatible with the input's strides " +
                                        shape_str(st) + " (use reshape, or .contiguous() first)");
        g.needs_copy = true;
        g.strides = contiguous_strides(g.shape);
      } else {
        g.strides = *s;
      }
      return g;
    }
    case OpId::flatten: {
      if (nd == 0) {
        g.shape = {1};
        g.strides = {1};
        return g;
      }
      int64_t s = wrap(a.i[0], x, name), e = wrap(a.i[1], x, name);
      if (s > e) detail::throw_value(name, "start_dim " + std::to_string(a.i[0]) + " comes after end_dim " + std::to_string(a.i[1]));
      Shape to;
      for (int64_t d = 0; d < s; ++d) to.push_back(xs[size_t(d)]);
      int64_t m = 1;
      for (int64_t d = s; d <= e; ++d) m *= xs[size_t(d)];
      to.push_back(m);
      for (int64_t d = e + 1; d < nd; ++d) to.push_back(xs[size_t(d)]);
      Attrs r;
      r.ints = to;
      return view_geometry(OpId::reshape, r, x);
    }
    case OpId::unflatten: {
      int64_t d = wrap(a.i[0], x, name);
      if (a.ints.empty()) detail::throw_value(name, "sizes must not be empty");
      Shape sizes = infer_size(a.ints, xs[size_t(d)], name);
      Shape to;
      for (int64_t i = 0; i < nd; ++i) {
        if (i == d) for (int64_t s : sizes) to.push_back(s);
        else to.push_back(xs[size_t(i)]);
      }
      Attrs r;
      r.ints = to;
      return view_geometry(OpId::view, r, x);
    }
    case OpId::permute: {
      if (int64_t(a.ints.size()) != nd)
        detail::throw_shape(name, "expected " + std::to_string(nd) + " dims in the permutation, found " + shape_str(a.ints));
      std::vector<bool> seen(size_t(nd), false);
      for (size_t i = 0; i < a.ints.size(); ++i) {
        int64_t d = wrap(a.ints[i], x, name);
        if (seen[size_t(d)]) detail::throw_value(name, "repeated dim in permutation " + shape_str(a.ints));
        seen[size_t(d)] = true;
        g.shape[i] = xs[size_t(d)];
        g.strides[i] = st[size_t(d)];
      }
      return g;
    }
    case OpId::transpose: {
      int64_t d0 = wrap(a.i[0], x, name), d1 = wrap(a.i[1], x, name);
      if (nd == 0) return g;
      std::swap(g.shape[size_t(d0)], g.shape[size_t(d1)]);
      std::swap(g.strides[size_t(d0)], g.strides[size_t(d1)]);
      return g;
    }
    case OpId::movedim: {
      if (a.ints.size() != a.ints2.size())
        detail::throw_value(name, "source " + shape_str(a.ints) + " and destination " + shape_str(a.ints2) + " differ in length");
      std::vector<int64_t> perm(size_t(nd), -1);
      std::vector<bool> used(size_t(nd), false);
      for (size_t i = 0; i < a.ints.size(); ++i) {
        int64_t s = wrap(a.ints[i], x, name), t = wrap(a.ints2[i], x, name);
        if (perm[size_t(t)] != -1 || used[size_t(s)])
          detail::throw_value(name, "repeated dim in source or destination");
        perm[size_t(t)] = s;
        used[size_t(s)] = true;
      }
      int64_t next = 0;
      for (auto& p : perm) {
        if (p != -1) continue;
        while (used[size_t(next)]) ++next;
        p = next++;
      }
      Attrs r;
      r.ints = Shape(perm);
      return view_geometry(OpId::permute, r, x);
    }
    case OpId::squeeze: {
      Shape dims = a.ints.empty() ? Shape() : reduce_dims(a.ints, nd, name);
      Shape s2, t2;
      for (int64_t d = 0; d < nd; ++d) {
        bool listed = a.ints.empty() || std::find(dims.begin(), dims.end(), d) != dims.end();
        if (listed && xs[size_t(d)] == 1) continue;
        s2.push_back(xs[size_t(d)]);
        t2.push_back(st[size_t(d)]);
      }
      g.shape = s2;
      g.strides = t2;
      return g;
    }
    case OpId::unsqueeze: {
      int64_t d = wrap_dim(a.i[0], nd + 1, name);
      int64_t s = d < nd ? st[size_t(d)] * xs[size_t(d)] : 1;
      g.shape.insert(size_t(d), 1);
      g.strides.insert(size_t(d), s);
      return g;
    }
    case OpId::expand: case OpId::broadcast_to: {
      const Shape& to = a.ints;
      if (int64_t(to.size()) < nd)
        detail::throw_shape(name, "cannot expand shape " + shape_str(xs) + " to fewer dims " + shape_str(to));
      size_t off = to.size() - size_t(nd);
      g.shape = Shape(to.size());
      g.strides = Shape(to.size());
      for (size_t i = 0; i < to.size(); ++i) {
        int64_t want = to[i];
        if (i < off) {
          if (want < 0) detail::throw_shape(name, "-1 is not allowed for new leading dims in " + shape_str(to));
          g.shape[i] = want;
          g.strides[i] = 0;
          continue;
        }
        int64_t have = xs[i - off];
        if (want == -1) want = have;
        if (want < 0)
          detail::throw_shape(name, "invalid size " + std::to_string(want) + " in " + shape_str(to));
        if (have != want && have != 1)
          detail::throw_shape(name, "cannot expand shape " + shape_str(xs) + " to " + shape_str(to) +
                                        ": dim " + std::to_string(i) + " is " + std::to_string(have) +
                                        " (only size-1 dims expand)");
        g.shape[i] = want;
        g.strides[i] = have == want ? st[i - off] : 0;
      }
      return g;
    }
    case OpId::slice: {
      if (nd == 0) detail::throw_index(name, "cannot slice a 0-d tensor");
      int64_t d = wrap(a.i[0], x, name);
      int64_t n = xs[size_t(d)], step = a.i[3];
      if (step <= 0) detail::throw_value(name, "step must be positive, found " + std::to_string(step));
      int64_t s = a.b[0] ? a.i[1] : 0, e = a.b[1] ? a.i[2] : n;
      if (s < 0) s += n;
      if (e < 0) e += n;
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, s, n);
      g.shape[size_t(d)] = (e - s) / step + ((e - s) % step != 0);
      // A step past the dim's size keeps at most one element, whose stride does not matter:
      // clamping it keeps the stride from overflowing.
      g.strides[size_t(d)] = st[size_t(d)] * std::min<int64_t>(step, std::max<int64_t>(n, 1));
      g.offset += s * st[size_t(d)];
      return g;
    }
    case OpId::select: {
      if (nd == 0) detail::throw_index(name, "cannot select from a 0-d tensor");
      int64_t d = wrap(a.i[0], x, name);
      int64_t n = xs[size_t(d)], i = a.i[1];
      if (i < -n || i >= n)
        detail::throw_index(name, "index " + std::to_string(i) + " is out of bounds for dim " +
                                      std::to_string(d) + " of size " + std::to_string(n));
      if (i < 0) i += n;
      g.offset += i * st[size_t(d)];
      g.shape.erase(size_t(d));
      g.strides.erase(size_t(d));
      return g;
    }
    case OpId::narrow: {
      if (nd == 0) detail::throw_index(name, "cannot narrow a 0-d tensor");
      int64_t d = wrap(a.i[0], x, name);
      int64_t n = xs[size_t(d)], s = a.i[1], len = a.i[2];
      if (s < 0) s += n;
      if (s < 0 || s > n || len < 0 || len > n - s)
        detail::throw_index(name, "start " + std::to_string(a.i[1]) + " and length " + std::to_string(len) +
                                      " exceed dim " + std::to_string(d) + " of size " + std::to_string(n));
      g.shape[size_t(d)] = len;
      g.offset += s * st[size_t(d)];
      return g;
    }
    case OpId::diagonal: {
      if (nd < 2) detail::throw_shape(name, "expected at least 2 dims, found " + std::to_string(nd));
      int64_t d0 = wrap(a.i[1], x, name), d1 = wrap(a.i[2], x, name), off = a.i[0];
      if (d0 == d1) detail::throw_value(name, "dim1 and dim2 must differ");
      int64_t n0 = xs[size_t(d0)], n1 = xs[size_t(d1)];
      int64_t len = off >= 0 ? std::max<int64_t>(0, std::min(n0, n1 - off))
                             : std::max<int64_t>(0, std::min(n0 + off, n1));
      if (len > 0) g.offset += off >= 0 ? off * st[size_t(d1)] : -off * st[size_t(d0)];
      Shape s2, t2;
      for (int64_t d = 0; d < nd; ++d)
        if (d != d0 && d != d1) {
          s2.push_back(xs[size_t(d)]);
          t2.push_back(st[size_t(d)]);
        }
      s2.push_back(len);
      t2.push_back(st[size_t(d0)] + st[size_t(d1)]);
      g.shape = s2;
      g.strides = t2;
      return g;
    }
    default:
      detail::throw_value(name, "not a view op");
  }
}

namespace {

void infer_view(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  require_defined(in[0], name);
  out.add(view_geometry(op, a, in[0]).shape, in[0].dtype());
}

void infer_copy(OpId op, const Attrs&, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  for (const Tensor& t : in) require_defined(t, name);
  if (op == OpId::copy && in.size() == 2) {  // copy_(dst, src): src broadcasts to dst
    // A destination whose elements share memory (an expanded view) has no defined result:
    // refused, as torch does.
    const Tensor& d = in[0];
    for (int64_t k = 0; k < d.dim(); ++k)
      if (d.stride(k) == 0 && d.size(k) > 1)
        detail::throw_value("copy_", "the destination of shape " + shape_str(d.shape()) +
                                         " has stride 0 in dim " + std::to_string(k) +
                                         ": several of its elements share one memory location "
                                         "(write into a clone() instead)");
    Shape b = broadcast_shapes(in[0].shape(), in[1].shape(), name);
    if (b != in[0].shape())
      detail::throw_shape(name, "source of shape " + shape_str(in[1].shape()) +
                                    " does not broadcast to destination " + shape_str(in[0].shape()));
    out.add(in[0].shape(), in[0].dtype());
    return;
  }
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  out.add(in[0].shape(), in[0].dtype());
}

Tensor view_op(OpId op, const Tensor& x, const Attrs& a) { return dispatch1(op, a, {x}); }
Attrs with_ints(const Shape& s) {
  Attrs a;
  a.ints = s;
  return a;
}

}  // namespace

void register_view_ops() {
  for (OpId op : {OpId::reshape, OpId::view, OpId::flatten, OpId::unflatten, OpId::permute,
                  OpId::transpose, OpId::movedim, OpId::squeeze, OpId::unsqueeze, OpId::expand,
                  OpId::broadcast_to, OpId::slice, OpId::select, OpId::narrow, OpId::diagonal})
    op_def_mut(op).infer = infer_view;
  op_def_mut(OpId::contiguous).infer = infer_copy;
  op_def_mut(OpId::copy).infer = infer_copy;
}

}  // namespace ember::ops

namespace ember {
using ops::view_op;
using ops::with_ints;

Tensor reshape(const Tensor& x, const Shape& s) { return view_op(OpId::reshape, x, with_ints(s)); }
Tensor view(const Tensor& x, const Shape& s) { return view_op(OpId::view, x, with_ints(s)); }
Tensor flatten(const Tensor& x, int64_t s, int64_t e) {
  Attrs a;
  a.i = {s, e, 0, 0};
  return view_op(OpId::flatten, x, a);
}
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes) {
  Attrs a = with_ints(sizes);
  a.i[0] = dim;
  return view_op(OpId::unflatten, x, a);
}
Tensor permute(const Tensor& x, const Shape& dims) { return view_op(OpId::permute, x, with_ints(dims)); }
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  Attrs a;
  a.i = {d0, d1, 0, 0};
  return view_op(OpId::transpose, x, a);
}
Tensor movedim(const Tensor& x, const Shape& src, const Shape& dst) {
  Attrs a = with_ints(src);
  a.ints2 = dst;
  return view_op(OpId::movedim, x, a);
}
Tensor squeeze(const Tensor& x, const Shape& dims) { return view_op(OpId::squeeze, x, with_ints(dims)); }
Tensor unsqueeze(const Tensor& x, int64_t d) {
  Attrs a;
  a.i[0] = d;
  return view_op(OpId::unsqueeze, x, a);
}
Tensor expand(const Tensor& x, const Shape& s) { return view_op(OpId::expand, x, with_ints(s)); }
Tensor broadcast_to(const Tensor& x, const Shape& s) { return view_op(OpId::broadcast_to, x, with_ints(s)); }
Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
             int64_t step) {
  Attrs a;
  a.i = {dim, start.value_or(0), stop.value_or(0), step};
  a.b = {start.has_value(), stop.has_value(), false, false};
  return view_op(OpId::slice, x, a);
}
Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  Attrs a;
  a.i = {dim, index, 0, 0};
  return view_op(OpId::select, x, a);
}
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  Attrs a;
  a.i = {dim, start, length, 0};
  return view_op(OpId::narrow, x, a);
}
Tensor diagonal(const Tensor& x, int64_t offset, int64_t d0, int64_t d1) {
  Attrs a;
  a.i = {offset, d0, d1, 0};
  return view_op(OpId::diagonal, x, a);
}
Tensor contiguous(const Tensor& x) {
  if (x.defined() && x.is_contiguous() && !x.device().has_layers()) return x;
  return dispatch1(OpId::contiguous, {}, {x});
}
Tensor clone(const Tensor& x) { return dispatch1(OpId::copy, {}, {x}); }

}  // namespace ember

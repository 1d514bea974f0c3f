// Layout ops that copy: repeat, tile, repeat_interleave, flip, roll, tril, triu, pad (API,
// inference, decompositions). repeat/flip/roll/tril/triu have kernels; tile lowers to repeat,
// repeat_interleave to views + reshape or index_select, pad to fill + copy or index_select.
// flex also has a one-pass pad kernel; the decomposition serves other backends.
// Attrs: repeat: ints repeats. tile: ints reps. repeat_interleave: inputs (x) with i[0] repeats,
// or (x, repeats tensor) with i[0] the output length (the repeats' sum); b[0] a dim is given,
// i[1] the dim. flip: ints dims. roll: ints shifts,
// ints2 dims (empty: roll the flattened tensor). tril/triu: i[0] diagonal. pad: ints (left,
// right) pairs from the last dim backwards, mode = ops::PadMode, f[0] value.
#include <algorithm>
#include <cmath>

#include "ember/backends/backend.h"
#include "ember/ops/common.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"
#include "ember/ops/pad.h"
#include "ember/ops/binary.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember {
namespace {

using ops::require_defined;

void one_input(const char* op, std::span<const Tensor> in, size_t max = 1) {
  if (in.empty() || in.size() > max) detail::throw_value(op, "expected 1 input");
  require_defined(in[0], op);
}

void require_non_negative(const char* op, const Shape& s, const char* what) {
  for (int64_t v : s)
    if (v < 0)
      detail::throw_value(op, std::string("expected non-negative ") + what + ", found " +
                                  shape_str(s));
}

// repeat's shape rule: x's shape padded with leading 1s to the repeats' length, times repeats.
Shape repeated_shape(const char* op, const Shape& xs, const Shape& reps) {
  Shape s(reps.size());
  const size_t off = reps.size() - xs.size();
  for (size_t i = 0; i < reps.size(); ++i)
    s[i] = checked_mul(reps[i], i < off ? 1 : xs[i - off], op, "the repeated size");
  return s;
}

Shape tile_reps(const Tensor& x, const Shape& reps) {
  Shape r = reps;
  while (int64_t(r.size()) < x.dim()) r.insert(0, 1);
  return r;
}

// One padded dim: its input size n, pads l (left) and r (right), the mode.
int64_t padded_size(const char* op, ops::PadMode m, int64_t dim, int64_t n, int64_t l,
                    int64_t r) {
  const int64_t o = checked_add(checked_add(n, l, op, "the padded size"), r, op, "the padded size");
  const std::string where = " for dim " + std::to_string(dim) + " of size " + std::to_string(n);
  const std::string pads = "padding (" + std::to_string(l) + ", " + std::to_string(r) + ")";
  if (o < 0) detail::throw_shape(op, pads + " leaves a negative size" + where);
  const std::string mode = ops::mode_name(m);
  if (m == ops::PadMode::Constant || (l == 0 && r == 0)) return o;
  if (n == 0) detail::throw_shape(op, "cannot " + mode + "-pad an empty dim" + where);
  if (m == ops::PadMode::Reflect && (l >= n || r >= n))
    detail::throw_value(op, "reflect " + pads + " must be smaller than the size" + where);
  if (m == ops::PadMode::Circular) {
    const int64_t kept = n - std::max<int64_t>(-l, 0) - std::max<int64_t>(-r, 0);
    if (kept <= 0 || l > kept || r > kept)
      detail::throw_value(op, "circular " + pads + " wraps around more than once" + where);
  }
  return o;
}

void infer_layout_copy(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  one_input(name, in, op == OpId::repeat_interleave ? 2 : 1);
  const Tensor& x = in[0];
  switch (op) {
    case OpId::repeat:
      if (int64_t(a.ints.size()) < x.dim())
        detail::throw_shape(name, "expected at least " + std::to_string(x.dim()) +
                                      " repeats (one per dim), found " + shape_str(a.ints));
      require_non_negative(name, a.ints, "repeats");
      out.add(repeated_shape(name, x.shape(), a.ints), x.dtype());
      return;
    case OpId::tile:
      require_non_negative(name, a.ints, "reps");
      out.add(repeated_shape(name, x.shape(), tile_reps(x, a.ints)), x.dtype());
      return;
    case OpId::repeat_interleave: {
      const bool by_tensor = in.size() > 1;
      const int64_t dim = a.b[0] ? wrap_dim(a.i[1], x.dim(), name) : 0;
      const int64_t n = a.b[0] && x.dim() > 0 ? x.size(dim) : x.numel();
      int64_t len = a.i[0];  // with a repeats tensor: their sum, known at the front end
      if (by_tensor) {
        const Tensor& r = in[1];
        require_defined(r, name, "repeats");
        if (r.dtype() != DType::I64 && r.dtype() != DType::I32)
          detail::throw_dtype(name, "expected int64 or int32 repeats, found " +
                                        std::string(dtype_name(r.dtype())));
        if (r.dim() > 1 || (r.dim() == 1 && r.numel() != 1 && r.numel() != n))
          detail::throw_shape(name, "expected 0-d repeats or one per element (" +
                                        std::to_string(n) + "), found shape " +
                                        shape_str(r.shape()));
        if (len < 0)
          detail::throw_value(name, "output_size must be non-negative, found " +
                                        std::to_string(len));
      } else {
        if (a.i[0] < 0)
          detail::throw_value(name, "repeats must be non-negative, found " +
                                        std::to_string(a.i[0]));
        len = checked_mul(n, a.i[0], name, "the repeated length");
      }
      Shape s = a.b[0] && x.dim() > 0 ? x.shape() : Shape{n};
      s[size_t(a.b[0] && x.dim() > 0 ? dim : 0)] = len;
      out.add(s, x.dtype());
      return;
    }
    case OpId::flip: {
      std::vector<bool> seen(size_t(std::max<int64_t>(x.dim(), 1)), false);
      for (int64_t d : a.ints) {
        int64_t w = wrap_dim(d, x.dim(), name);
        if (seen[size_t(w)])
          detail::throw_value(name, "dim " + std::to_string(d) + " appears more than once in " +
                                        shape_str(a.ints));
        seen[size_t(w)] = true;
      }
      out.add(x.shape(), x.dtype());
      return;
    }
    case OpId::roll:
      if (a.ints.empty()) detail::throw_value(name, "expected at least one shift");
      if (a.ints2.empty() ? a.ints.size() != 1 : a.ints.size() != a.ints2.size())
        detail::throw_value(name, "shifts " + shape_str(a.ints) + " and dims " +
                                      shape_str(a.ints2) + " must align (one shift without dims)");
      for (int64_t d : a.ints2) wrap_dim(d, x.dim(), name);
      out.add(x.shape(), x.dtype());
      return;
    case OpId::tril: case OpId::triu:
      if (x.dim() < 2)
        detail::throw_shape(name, "expected a tensor of at least 2 dims, found shape " +
                                      shape_str(x.shape()));
      out.add(x.shape(), x.dtype());
      return;
    default: {  // pad
      const Shape& p = a.ints;
      const auto mode = ops::mode_of(name, a.mode, ops::PadMode::Circular);
      if (p.size() % 2)
        detail::throw_value(name, "expected (left, right) pairs, found " +
                                      std::to_string(p.size()) + " padding values");
      if (int64_t(p.size() / 2) > x.dim())
        detail::throw_shape(name, std::to_string(p.size()) + " padding values pad " +
                                      std::to_string(p.size() / 2) + " dims, but the input has " +
                                      std::to_string(x.dim()));
      if (mode == ops::PadMode::Constant && is_integral(x.dtype(), true) && !std::isfinite(a.f[0]))
        detail::throw_value(name, "cannot pad a " + std::string(dtype_name(x.dtype())) +
                                      " tensor with " + std::to_string(a.f[0]));
      Shape s = x.shape();
      for (size_t j = 0; j < p.size() / 2; ++j) {
        const int64_t d = x.dim() - 1 - int64_t(j);
        s[size_t(d)] = padded_size(name, mode, d, x.size(d), p[2 * j], p[2 * j + 1]);
      }
      out.add(s, x.dtype());
      return;
    }
  }
}

// Views share storage; copying ops must not hand back an alias of their input.
Tensor fresh(const Tensor& y, const Tensor& x) { return y.is_alias_of(x) ? clone(y) : y; }

TensorList d_tile(const Attrs& a, std::span<const Tensor> in) {
  return {repeat(in[0], tile_reps(in[0], a.ints))};
}

TensorList d_repeat_interleave(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  Tensor y = a.b[0] && x.dim() > 0 ? x : reshape(x, {-1});
  const int64_t dim = a.b[0] && x.dim() > 0 ? wrap_dim(a.i[1], x.dim(), "repeat_interleave") : 0;
  const int64_t n = y.size(dim);
  if (in.size() == 1) {  // y[.., i, ..] repeated r times: a broadcast view, then one copy
    const int64_t r = a.i[0];
    Shape e = y.shape(), s = y.shape();
    e.insert(size_t(dim) + 1, r);
    s[size_t(dim)] = n * r;
    return {fresh(reshape(expand(unsqueeze(y, dim + 1), e), s), x)};
  }
  // On the device, without reading the repeats: element i's run starts at the exclusive prefix
  // sum of the repeats; a mark at each start (runs of length 0 share the next start, an end start
  // falls in the extra slot) and a prefix sum of the marks give every output position its source.
  const int64_t len = a.i[0];
  Tensor reps = expand(in[1].to(DType::I64).reshape({-1}), {n});
  Tensor start = cumsum(reps, 0) - reps;
  Tensor marks = index_add(zeros({len + 1}, {DType::I64, x.device()}), 0, start,
                           ones({n}, {DType::I64, x.device()}));
  Tensor it = cumsum(marks.narrow(0, 0, len), 0) - 1;
  return {index_select(y, dim, it)};
}

TensorList d_pad(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const Shape& p = a.ints;
  const size_t k = p.size() / 2;
  if (ops::PadMode(a.mode) == ops::PadMode::Constant) {
    Shape s = x.shape();
    Tensor src = x;
    for (size_t j = 0; j < k; ++j) {
      const int64_t d = x.dim() - 1 - int64_t(j);
      s[size_t(d)] += p[2 * j] + p[2 * j + 1];
    }
    Tensor out = full(s, a.f[0], {x.dtype(), x.device()});
    Tensor dst = out;
    for (size_t j = 0; j < k; ++j) {
      const int64_t d = x.dim() - 1 - int64_t(j), l = p[2 * j], r = p[2 * j + 1];
      const int64_t len = x.size(d) - std::max<int64_t>(-l, 0) - std::max<int64_t>(-r, 0);
      if (len <= 0) return {out};  // cropped away: only the fill value is left
      src = narrow(src, d, std::max<int64_t>(-l, 0), len);
      dst = narrow(dst, d, std::max<int64_t>(l, 0), len);
    }
    if (dst.numel() > 0) dst.copy_(src);
    return {out};
  }
  Tensor y = x;
  for (size_t j = 0; j < k; ++j) {
    const int64_t d = x.dim() - 1 - int64_t(j), l = p[2 * j], r = p[2 * j + 1];
    if (l == 0 && r == 0) continue;
    const int64_t n = x.size(d);
    std::vector<int64_t> idx(size_t(n + l + r));
    for (int64_t q = 0; q < int64_t(idx.size()); ++q)
      idx[size_t(q)] = ops::pad_source(ops::PadMode(a.mode), q, n, l, r);
    y = index_select(y, d, tensor(idx, {int64_t(idx.size())}, DType::I64, x.device()));
  }
  return {fresh(y, x)};
}

// tril keeps column - row <= diagonal, triu column - row >= diagonal: a select against a
// [rows, cols] mask of two ranges (what backends without a kernel of their own run).
Tensor band(const Tensor& x, int64_t diagonal, bool lower) {
  const TensorOptions i64{DType::I64, x.device()};
  const Tensor diff = arange(x.size(-1), i64).unsqueeze(0) - arange(x.size(-2), i64).unsqueeze(1);
  return where(lower ? le(diff, diagonal) : ge(diff, diagonal), x, Scalar(0)).to(x.dtype());
}
TensorList d_tril(const Attrs& a, std::span<const Tensor> in) {
  return {band(in[0], a.i[0], true)};
}
TensorList d_triu(const Attrs& a, std::span<const Tensor> in) {
  return {band(in[0], a.i[0], false)};
}

}  // namespace

Tensor repeat(const Tensor& x, const Shape& repeats) {
  Attrs a;
  a.ints = repeats;
  return dispatch1(OpId::repeat, a, {x});
}
Tensor tile(const Tensor& x, const Shape& reps) {
  Attrs a;
  a.ints = reps;
  return dispatch1(OpId::tile, a, {x});
}
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
  Attrs a;
  a.i = {repeats, dim.value_or(0), 0, 0};
  a.b[0] = dim.has_value();
  return dispatch1(OpId::repeat_interleave, a, {x});
}
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  const char* name = "repeat_interleave";
  require_defined(x, name);
  require_defined(repeats, name, "repeats");
  if (!is_integral(repeats.dtype()))
    detail::throw_dtype(name, "expected int64 or int32 repeats, found " +
                                  std::string(dtype_name(repeats.dtype())));
  Attrs a;
  a.i[1] = dim.value_or(0);
  a.b[0] = dim.has_value();
  const int64_t n = dim && x.dim() > 0 ? x.size(wrap_dim(*dim, x.dim(), name)) : x.numel();
  const Tensor r = repeats.to(DType::I64);
  const Tensor total = r.numel() == 1 ? r.reshape({}) * n : sum(r);
  const Tensor non_negative = logical_not(any(lt(r, 0)));
  if (output_size) {  // no sync: the repeats are checked when the device next synchronises
    a.i[0] = *output_size;
    detail::deferred_check(non_negative, name, "repeats must be non-negative");
    detail::deferred_check(eq(total, *output_size), name,
                           "output_size " + std::to_string(*output_size) +
                               " differs from the sum of the repeats");
  } else {  // the output's length is the repeats' sum: a documented sync point
    if (!non_negative.item<bool>()) detail::throw_value(name, "repeats must be non-negative");
    a.i[0] = total.item<int64_t>();
  }
  return dispatch1(OpId::repeat_interleave, a, {x, repeats});
}
Tensor flip(const Tensor& x, const Shape& dims) {
  Attrs a;
  a.ints = dims;
  return dispatch1(OpId::flip, a, {x});
}
Tensor roll(const Tensor& x, const Shape& shifts, const Shape& dims) {
  Attrs a;
  a.ints = shifts;
  a.ints2 = dims;
  return dispatch1(OpId::roll, a, {x});
}
Tensor tril(const Tensor& x, int64_t diagonal) {
  Attrs a;
  a.i[0] = diagonal;
  return dispatch1(OpId::tril, a, {x});
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  Attrs a;
  a.i[0] = diagonal;
  return dispatch1(OpId::triu, a, {x});
}
Tensor pad(const Tensor& x, const Shape& pad, const std::string& mode, double value) {
  Attrs a;
  a.ints = pad;
  a.mode = uint8_t(ops::parse_pad_mode("pad", mode));
  a.f[0] = value;
  return dispatch1(OpId::pad, a, {x});
}

namespace ops {
void register_layout_copy_ops() {
  for (OpId op : {OpId::repeat, OpId::tile, OpId::repeat_interleave, OpId::flip, OpId::roll,
                  OpId::tril, OpId::triu, OpId::pad})
    op_def_mut(op).infer = infer_layout_copy;
  op_def_mut(OpId::tile).decompose = d_tile;
  op_def_mut(OpId::repeat_interleave).decompose = d_repeat_interleave;
  op_def_mut(OpId::pad).decompose = d_pad;
  op_def_mut(OpId::tril).decompose = d_tril;
  op_def_mut(OpId::triu).decompose = d_triu;
}
}  // namespace ops

}  // namespace ember

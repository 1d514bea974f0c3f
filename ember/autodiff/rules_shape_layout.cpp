// VJP rules: layout ops (cat, repeat, flip, roll, tril, triu, pad; and split, chunk, unbind,
// which also decompose). Each gradient is the adjoint rearrangement: pieces of g, sums over the
// tiles, the inverse flip or roll, the same triangle, the pad's crop with the border added back
// where reflect/replicate/circular read, or the pieces' cotangents joined back together.
#include <algorithm>

#include "ember/autodiff/rules_shape.h"
#include "ember/ops/pad.h"

namespace ember::autodiff::shape_rules {
namespace {

// torch skips 1-d empty tensors in cat; they get no share of g.
bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

TensorList vjp_cat(const VjpCtx& c) {
  TensorList out(c.inputs.size());
  const Tensor* ref = nullptr;
  for (const Tensor& t : c.inputs)
    if (!skipped_in_cat(t)) {
      ref = &t;
      break;
    }
  if (!ref) return out;
  const Tensor& g = c.grad(0);
  const int64_t dim = wrap_dim(c.attrs.i[0], ref->dim(), "cat");
  int64_t off = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor& t = c.input(i);
    if (skipped_in_cat(t)) continue;
    if (wants(c, i)) out[i] = like(narrow(g, dim, off, t.size(dim)), t);
    off += t.size(dim);
  }
  return out;
}

// repeat: x (with leading 1s up to the repeats' length) is tiled reps[d] times along each d, so
// dim d of g splits into [reps[d], x[d]] and the tiles are summed, one repeated dim at a time
// (splitting every dim at once could pass the rank limit).
TensorList vjp_repeat(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  const Tensor& x = c.input(0);
  const Shape& reps = c.attrs.ints;
  const size_t lead = reps.size() - size_t(x.dim());
  Tensor g = c.grad(0);
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] == 1) continue;
    const int64_t xd = d < lead ? 1 : x.size(int64_t(d - lead));
    Shape split = g.shape();
    split[d] = xd;
    split.insert(d, reps[d]);
    g = sum(reshape(g, split), {int64_t(d)});
  }
  return {reshape(g, x.shape())};
}

TensorList vjp_flip(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  return {flip(c.grad(0), c.attrs.ints)};
}

TensorList vjp_roll(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  Shape back = c.attrs.ints;
  for (int64_t& s : back) s = -s;
  return {roll(c.grad(0), back, c.attrs.ints2)};
}

TensorList vjp_tril(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  return {tril(c.grad(0), c.attrs.i[0])};
}

TensorList vjp_triu(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  return {triu(c.grad(0), c.attrs.i[0])};
}

// constant: out[q] = x[q - l] inside the kept range, so the gradient is g cropped by the
// negated pads (negative pads, which cropped x, pad zeros back). Other modes read x at
// ops::pad_source positions, several outputs per border element: each padded dim adds g back
// into x's size with index_add over those positions.
TensorList vjp_pad(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  const Tensor& x = c.input(0);
  const Shape& p = c.attrs.ints;
  Tensor g = c.grad(0);
  const auto mode = ops::PadMode(c.attrs.mode);
  if (mode == ops::PadMode::Constant) {
    Shape back = p;
    for (int64_t& v : back) v = -v;
    return {pad(g, back)};
  }
  for (size_t j = 0; j < p.size() / 2; ++j) {
    const int64_t d = x.dim() - 1 - int64_t(j), l = p[2 * j], r = p[2 * j + 1];
    if (l == 0 && r == 0) continue;
    const int64_t n = x.size(d);
    std::vector<int64_t> src(size_t(n + l + r));
    for (int64_t q = 0; q < int64_t(src.size()); ++q)
      src[size_t(q)] = ops::pad_source(mode, q, n, l, r);
    Shape s = g.shape();
    s[size_t(d)] = n;
    Tensor idx = tensor(src, {int64_t(src.size())}, DType::I64, g.device());
    g = index_add(zeros_as(s, g), d, idx, g);
  }
  return {g};
}

// split, chunk, unbind (dedicated rules: through their decompositions each piece's gradient would
// be padded to x's full size and summed, quadratic in the piece count): the pieces' cotangents
// joined back along dim, zeros standing in for undefined ones.
TensorList vjp_pieces(const VjpCtx& c) {
  if (!wants(c, 0)) return {Tensor()};
  const Tensor& x = c.input(0);
  const bool unbind = c.op == OpId::unbind;
  const int64_t dim = wrap_dim(unbind ? c.attrs.i[0] : c.attrs.i[1], x.dim(), op_name(c.op));
  TensorList parts;
  for (size_t k = 0; k < c.outputs.size(); ++k) {
    const Tensor& g = k < c.grads.size() ? c.grad(k) : Tensor();
    Tensor p = g.defined() ? g : zeros(c.output(k).shape(), {x.dtype(), x.device()});
    parts.push_back(unbind ? unsqueeze(p, dim) : p);
  }
  if (parts.empty()) return {zeros_like(x)};
  return {reshape(cat(parts, dim), x.shape())};
}

}  // namespace

void register_layout() {
  set_vjp(OpId::cat, vjp_cat);
  set_vjp(OpId::repeat, vjp_repeat);
  set_vjp(OpId::flip, vjp_flip);
  set_vjp(OpId::roll, vjp_roll);
  set_vjp(OpId::tril, vjp_tril);
  set_vjp(OpId::triu, vjp_triu);
  set_vjp(OpId::pad, vjp_pad);
  for (OpId op : {OpId::split, OpId::chunk, OpId::unbind}) set_vjp(op, vjp_pieces);
}

}  // namespace ember::autodiff::shape_rules

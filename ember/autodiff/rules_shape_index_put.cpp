// VJP rule: index_put (advanced-index assignment). x keeps g where nothing was written (all of
// it with accumulate); values get g read back at the indexed positions, as torch's advanced
// indexing reads them, summed over the dims values were broadcast along.
#include "ember/autodiff/rules_shape.h"

namespace ember::autodiff::shape_rules {
namespace {

bool is_mask(DType d) { return d == DType::Bool || d == DType::U8; }

// index_put's index list, one entry per dim of x (undefined = ":"): a k-dim mask becomes its
// k nonzero coordinate columns, integer indices become int64 with negatives wrapped.
struct Indexing {
  TensorList per_dim;
  Tensor keep;  // 0-d masks, and-ed: false selects nothing (kept on the device, not read)
};

Indexing resolve(const Shape& xs, std::span<const Tensor> entries) {
  Indexing ix;
  for (const Tensor& t : entries) {
    if (!t.defined()) {
      ix.per_dim.push_back(t);
    } else if (is_mask(t.dtype())) {
      if (t.dim() == 0) {  // covers no dim: true keeps everything
        const Tensor m = ne(t, 0);
        ix.keep = ix.keep.defined() ? logical_and(ix.keep, m) : m;
        continue;
      }
      Tensor nz = nonzero(t);
      for (int64_t j = 0; j < t.dim(); ++j) ix.per_dim.push_back(select(nz, 1, j));
    } else {
      Tensor i = t.to(DType::I64);
      const int64_t n = xs[ix.per_dim.size()];
      ix.per_dim.push_back(where(lt(i, 0), add(i, n), i));
    }
  }
  ix.per_dim.resize(xs.size());
  return ix;
}

// g[indices]: the indexed dims are flattened into one (after moving them to the front), read
// with one index_select at the combined flat index, and the broadcast index shape B takes their
// place: where the first indexed dim was when they are adjacent, else in front (torch's rule).
Tensor read(const Tensor& g, const Indexing& ix) {
  Shape kd, front, rest;
  Tensor flat;
  int64_t span = 1;
  for (int64_t d = 0; d < g.dim(); ++d) {
    const Tensor& t = ix.per_dim[size_t(d)];
    if (!t.defined()) {
      rest.push_back(g.size(d));
      continue;
    }
    front.push_back(int64_t(kd.size()));
    kd.push_back(d);
    flat = flat.defined() ? add(mul(flat, g.size(d)), t) : t;
    span *= g.size(d);
  }
  if (kd.empty()) return g;
  const Shape b = flat.shape();
  Shape hs{span};
  for (int64_t s : rest) hs.push_back(s);
  Tensor h = reshape(movedim(g, kd, front), hs);
  Shape rs = b;
  for (int64_t s : rest) rs.push_back(s);
  Tensor r = reshape(index_select(h, 0, reshape(flat, {-1})), rs);
  const bool adjacent = kd.back() - kd.front() + 1 == int64_t(kd.size());
  if (adjacent && kd.front() > 0 && !b.empty()) {
    Shape from, to;
    for (size_t i = 0; i < b.size(); ++i) {
      from.push_back(int64_t(i));
      to.push_back(kd.front() + int64_t(i));
    }
    r = movedim(r, from, to);
  }
  return r;
}

// The indexed read r, reduced to values' shape (values broadcast to r's shape; the kernel also
// drops extra leading 1s of values).
Tensor to_values(const Tensor& r, const Shape& vs) {
  Shape s = vs;
  while (s.size() > size_t(r.dim()) && s[0] == 1) s.erase(0);
  return reshape(sum_to(r, s), vs);
}

TensorList vjp_index_put(const VjpCtx& c) {
  const Tensor& x = c.input(0);
  const Tensor& values = c.input(1);
  const Tensor& g = c.grad(0);
  const bool acc = c.attrs.b[0];
  const std::span<const Tensor> entries = c.inputs.subspan(2);
  const TensorList indices(entries.begin(), entries.end());
  TensorList out(c.inputs.size());
  if (wants(c, 0)) out[0] = acc ? g : index_put(g, indices, zeros_as({}, g));
  if (!wants(c, 1)) return out;
  Indexing ix = resolve(x.shape(), entries);
  Tensor r = read(g, ix);
  if (ix.keep.defined()) r = where(ix.keep, r, 0.0);
  if (!acc) {
    // With repeated indices the kernel's last write wins and the others never reach the
    // output: each read position writes its own number and keeps g only if it reads it back.
    Tensor ids = reshape(arange(r.numel(), {DType::I64, g.device()}), r.shape());
    Tensor owner = index_put(full(x.shape(), int64_t(-1), {DType::I64, g.device()}), indices, ids);
    r = where(eq(read(owner, ix), ids), r, 0.0);
  }
  out[1] = like(to_values(r, values.shape()), values);
  return out;
}

}  // namespace

void register_index_put() { set_vjp(OpId::index_put, vjp_index_put); }

}  // namespace ember::autodiff::shape_rules

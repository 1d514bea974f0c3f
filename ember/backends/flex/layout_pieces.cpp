#include "ember/backends/flex/layout_pieces.h"

#include <algorithm>

#include "ember/backends/flex/copy.h"
#include "ember/shape.h"

namespace ember::flex {

Tensor narrow_view(const Tensor& t, int64_t dim, int64_t start, int64_t len) {
  Shape s = t.shape();
  s[size_t(dim)] = len;
  return view_of(t, s, t.strides(), t.offset() + start * t.strides()[size_t(dim)]);
}

std::vector<Piece> cat_pieces(const Tensor& out, std::span<const Tensor> inputs, int64_t dim) {
  std::vector<Piece> pieces;
  int64_t off = 0;
  for (const Tensor& t : inputs) {
    if ((t.dim() == 1 && t.size(0) == 0) || t.numel() == 0) continue;
    pieces.push_back({narrow_view(out, dim, off, t.size(dim)), t});
    off += t.size(dim);
  }
  return pieces;
}

std::vector<Piece> stack_pieces(const Tensor& out, std::span<const Tensor> inputs, int64_t dim) {
  Shape s = out.shape(), st = out.strides();
  s.erase(size_t(dim));
  st.erase(size_t(dim));
  std::vector<Piece> pieces;
  for (size_t i = 0; i < inputs.size(); ++i)
    pieces.push_back(
        {view_of(out, s, st, out.offset() + int64_t(i) * out.strides()[size_t(dim)]), inputs[i]});
  return pieces;
}

Tensor flipped_view(const Tensor& x, const Shape& dims) {
  Shape st = x.strides();
  int64_t off = x.offset();
  if (x.dim() > 0)
    for (int64_t d : dims) {
      const int64_t w = wrap_dim(d, x.dim(), "flip"), n = x.size(w);
      off += (n - 1) * st[size_t(w)];
      st[size_t(w)] = -st[size_t(w)];
    }
  return view_of(x, x.shape(), st, off);
}

std::vector<Piece> roll_pieces(const Tensor& x, const Tensor& out, const Shape& dims_in,
                               const Shape& shifts) {
  Tensor src = x, dst = out;
  Shape dims = dims_in;
  if (dims.empty()) {  // the flattened tensor
    src = view_of(x, {x.numel()}, {1}, x.offset());
    dst = view_of(out, {out.numel()}, {1}, out.offset());
    dims = {0};
  }
  std::vector<int64_t> shift(size_t(std::max<int64_t>(src.dim(), 1)), 0);
  // Shifts reduced modulo the size as they are summed: any int64 shift, repeated, is fine.
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = wrap_dim(dims[k], src.dim(), "roll"), n = src.size(d);
    shift[size_t(d)] = (shift[size_t(d)] + shifts[k] % n) % n;
  }
  std::vector<int64_t> active;
  for (int64_t d = 0; d < src.dim(); ++d) {
    const int64_t n = src.size(d);
    shift[size_t(d)] = ((shift[size_t(d)] % n) + n) % n;
    if (shift[size_t(d)] != 0) active.push_back(d);
  }
  std::vector<Piece> pieces;
  for (int64_t mask = 0; mask < (int64_t(1) << active.size()); ++mask) {
    Tensor sv = src, dv = dst;
    for (size_t j = 0; j < active.size(); ++j) {
      const int64_t d = active[j], n = src.size(d), s = shift[size_t(d)];
      // the last s elements move to the front, the first n - s follow them
      const bool front = mask >> j & 1;
      sv = narrow_view(sv, d, front ? n - s : 0, front ? s : n - s);
      dv = narrow_view(dv, d, front ? 0 : s, front ? s : n - s);
    }
    pieces.push_back({dv, sv});
  }
  return pieces;
}

std::optional<Piece> repeat_piece(const Tensor& out, const Tensor& x, const Shape& reps,
                                  size_t max_dims) {
  const size_t off = reps.size() - size_t(x.dim());
  const Shape& os = out.strides();
  Shape sizes, dst_st, src_st;
  for (size_t i = 0; i < reps.size(); ++i) {
    const int64_t s = i < off ? 1 : x.size(int64_t(i - off));
    if (reps[i] != 1) {
      sizes.push_back(reps[i]);
      dst_st.push_back(s * os[i]);
      src_st.push_back(0);
    }
    if (s != 1) {
      sizes.push_back(s);
      dst_st.push_back(os[i]);
      src_st.push_back(x.strides()[i - off]);
    }
  }
  if (sizes.size() > max_dims) return std::nullopt;
  return Piece{view_of(out, sizes, dst_st, out.offset()), view_of(x, sizes, src_st, x.offset())};
}

}  // namespace ember::flex

// flex kernels: cat, stack, repeat, flip, roll, tril, triu (pad: pad.cpp). Each is a few strided
// copies (copy_into) between views of the input and of a fresh output, so only an element's width
// matters.
#include <algorithm>
#include <cstring>

#include "ember/backends/flex/copy.h"
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/layout_pieces.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/layout.h"

namespace ember::flex {
void register_flex_pad(BackendImpl& b);  // pad.cpp

namespace {

// Copies each piece: many small pieces one thread each, a few big ones each in parallel.
void copy_pieces(const std::vector<Piece>& pieces, int64_t total) {
  const int64_t n = int64_t(pieces.size());
  if (n > 2 && total / n < 32768 && total > 65536) {
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) copy_into(pieces[size_t(i)].dst, pieces[size_t(i)].src);
    });
  } else {
    for (const Piece& p : pieces) copy_into(p.dst, p.src);
  }
}

TensorList k_cat(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  copy_pieces(cat_pieces(out, c.inputs, wrap_dim(c.attrs.i[0], out.dim(), "cat")), out.numel());
  return {out};
}

// stack: input i goes to out.select(dim, i); no per-input dispatch (the decomposition into
// unsqueeze + cat serves other backends).
TensorList k_stack(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  copy_pieces(stack_pieces(out, c.inputs, wrap_dim(c.attrs.i[0], out.dim(), "stack")),
              out.numel());
  return {out};
}

TensorList k_repeat(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  const Shape& reps = c.attrs.ints;
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  // One strided copy unless that needs more dims than the loop engine walks.
  if (std::optional<Piece> p = repeat_piece(out, x, reps, 16)) {
    copy_into(p->dst, p->src);
    return {out};
  }
  // Too many dims for one pass: repeat one dim at a time.
  if (std::count_if(reps.begin(), reps.end(), [](int64_t r) { return r != 1; }) <= 1)
    ember::detail::throw_not_implemented("repeat", "more than 15 dims of size > 1");
  Shape padded(reps.size() - size_t(x.dim()), 1);
  for (int64_t s : x.shape()) padded.push_back(s);
  Tensor y = reshape(x, padded);
  for (size_t i = 0; i < reps.size(); ++i) {
    if (reps[i] == 1) continue;
    Shape one(reps.size(), 1);
    one[i] = reps[i];
    y = repeat(y, one);
  }
  copy_into(out, y);
  return {out};
}

TensorList k_flip(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  copy_into(out, flipped_view(c.inputs[0], c.attrs.ints));
  return {out};
}

TensorList k_roll(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  const Tensor x = c.attrs.ints2.empty() ? contiguous(c.inputs[0]) : c.inputs[0];
  for (const Piece& p : roll_pieces(x, out, c.attrs.ints2, c.attrs.ints)) copy_into(p.dst, p.src);
  return {out};
}

// tril/triu: per row, copy the kept column range and zero the rest (zero bits are zero in every
// dtype).
template <bool Lower>
TensorList k_triangle(const OpCall& c) {
  Tensor x = contiguous(c.inputs[0]);
  Tensor out = new_output(c);
  const int64_t rows = x.size(-2), cols = x.size(-1);
  // Diagonals beyond the matrix act like its edge; clamped so i + k + 1 cannot overflow.
  const int64_t k = std::clamp<int64_t>(c.attrs.i[0], -rows - 1, cols + 1);
  if (out.numel() == 0) return {out};
  const size_t isz = x.itemsize();
  const char* xp = static_cast<const char*>(x.raw_data());
  char* op = static_cast<char*>(out.raw_data());
  parallel_for(x.numel() / cols, std::max<int64_t>(1, 32768 / cols), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t i = r % rows;
      const int64_t lo = Lower ? 0 : std::clamp<int64_t>(i + k, 0, cols);
      const int64_t hi = Lower ? std::clamp<int64_t>(i + k + 1, 0, cols) : cols;
      char* row = op + size_t(r * cols) * isz;
      std::memset(row, 0, size_t(lo) * isz);
      std::memcpy(row + size_t(lo) * isz, xp + size_t(r * cols + lo) * isz, size_t(hi - lo) * isz);
      std::memset(row + size_t(hi) * isz, 0, size_t(cols - hi) * isz);
    }
  });
  return {out};
}

}  // namespace

void register_flex_layout(BackendImpl& b) {
  b.set_kernel(OpId::cat, k_cat, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::stack, k_stack, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::repeat, k_repeat, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::flip, k_flip, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::roll, k_roll, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::tril, k_triangle<true>, kAllDTypes);
  b.set_kernel(OpId::triu, k_triangle<false>, kAllDTypes);
  register_flex_pad(b);
}

}  // namespace ember::flex

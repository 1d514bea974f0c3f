// flex kernels: cat, stack, repeat, flip, roll, tril, triu (pad: pad.cpp). Each is a few strided
// copies (copy_into) between views of the input and of a fresh output, so only an element's width
// matters.
#include <algorithm>
#include <cstring>

#include "ember/backends/flex/copy.h"
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/layout.h"

namespace ember::flex {
void register_flex_pad(BackendImpl& b);  // pad.cpp

namespace {

Tensor narrow_view(const Tensor& t, int64_t dim, int64_t start, int64_t len) {
  Shape s = t.shape();
  s[size_t(dim)] = len;
  return view_of(t, s, t.strides(), t.offset() + start * t.strides()[size_t(dim)]);
}

bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

// Copies srcs[i] into dsts[i]: many small pieces one thread each, a few big ones each in parallel.
void copy_pieces(const std::vector<Tensor>& dsts, const std::vector<const Tensor*>& srcs,
                 int64_t total) {
  const int64_t n = int64_t(dsts.size());
  if (n > 2 && total / n < 32768 && total > 65536) {
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) copy_into(dsts[size_t(i)], *srcs[size_t(i)]);
    });
  } else {
    for (int64_t i = 0; i < n; ++i) copy_into(dsts[size_t(i)], *srcs[size_t(i)]);
  }
}

TensorList k_cat(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  const int64_t dim = wrap_dim(c.attrs.i[0], out.dim(), "cat");
  std::vector<Tensor> dsts;
  std::vector<const Tensor*> srcs;
  int64_t off = 0;
  for (const Tensor& t : c.inputs) {
    if (skipped_in_cat(t) || t.numel() == 0) continue;
    dsts.push_back(narrow_view(out, dim, off, t.size(dim)));
    srcs.push_back(&t);
    off += t.size(dim);
  }
  copy_pieces(dsts, srcs, out.numel());
  return {out};
}

// stack: input i goes to out.select(dim, i); no per-input dispatch (the decomposition into
// unsqueeze + cat serves other backends).
TensorList k_stack(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  const int64_t dim = wrap_dim(c.attrs.i[0], out.dim(), "stack");
  Shape s = out.shape(), st = out.strides();
  s.erase(size_t(dim));
  st.erase(size_t(dim));
  std::vector<Tensor> dsts;
  std::vector<const Tensor*> srcs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    dsts.push_back(view_of(out, s, st, out.offset() + int64_t(i) * out.strides()[size_t(dim)]));
    srcs.push_back(&c.inputs[i]);
  }
  copy_pieces(dsts, srcs, out.numel());
  return {out};
}

// out viewed as [r0, s0, r1, s1, ...] (size-1 entries left out) receives x broadcast over the
// r's: one strided copy whatever the number of dims.
bool repeat_into(const Tensor& out, const Tensor& x, const Shape& reps) {
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
  if (sizes.size() > 16) return false;  // more dims than the loop engine walks
  copy_into(view_of(out, sizes, dst_st, out.offset()), view_of(x, sizes, src_st, x.offset()));
  return true;
}

TensorList k_repeat(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  const Shape& reps = c.attrs.ints;
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  if (repeat_into(out, x, reps)) return {out};
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

// flip: a view of x with the flipped dims' strides negated, copied out.
TensorList k_flip(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  Shape st = x.strides();
  int64_t off = x.offset();
  if (x.dim() > 0)
    for (int64_t d : c.attrs.ints) {
      const int64_t w = wrap_dim(d, x.dim(), "flip"), n = x.size(w);
      off += (n - 1) * st[size_t(w)];
      st[size_t(w)] = -st[size_t(w)];
    }
  copy_into(out, view_of(x, x.shape(), st, off));
  return {out};
}

// roll: along k shifted dims the output is 2^k blocks, each a plain copy of one input block.
TensorList k_roll(const OpCall& c) {
  const Attrs& a = c.attrs;
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  Tensor src = c.inputs[0], dst = out;
  Shape dims = a.ints2;
  if (dims.empty()) {  // roll the flattened tensor
    src = reshape(src, {-1});
    dst = view_of(out, {out.numel()}, {1}, 0);
    dims = {0};
  }
  std::vector<int64_t> shift(size_t(std::max<int64_t>(src.dim(), 1)), 0);
  // Shifts reduced modulo the size as they are summed: any int64 shift, repeated, is fine.
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = wrap_dim(dims[k], src.dim(), "roll"), n = src.size(d);
    shift[size_t(d)] = (shift[size_t(d)] + a.ints[k] % n) % n;
  }
  std::vector<int64_t> active;
  for (int64_t d = 0; d < src.dim(); ++d) {
    const int64_t n = src.size(d);
    shift[size_t(d)] = ((shift[size_t(d)] % n) + n) % n;
    if (shift[size_t(d)] != 0) active.push_back(d);
  }
  for (int64_t mask = 0; mask < (int64_t(1) << active.size()); ++mask) {
    Tensor sv = src, dv = dst;
    for (size_t j = 0; j < active.size(); ++j) {
      const int64_t d = active[j], n = src.size(d), s = shift[size_t(d)];
      // the last s elements move to the front, the first n - s follow them
      if (mask >> j & 1) {
        sv = narrow_view(sv, d, n - s, s);
        dv = narrow_view(dv, d, 0, s);
      } else {
        sv = narrow_view(sv, d, 0, n - s);
        dv = narrow_view(dv, d, s, n - s);
      }
    }
    copy_into(dv, sv);
  }
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
  b.set_kernel(OpId::cat, k_cat, kAllDTypes);
  b.set_kernel(OpId::stack, k_stack, kAllDTypes);
  b.set_kernel(OpId::repeat, k_repeat, kAllDTypes);
  b.set_kernel(OpId::flip, k_flip, kAllDTypes);
  b.set_kernel(OpId::roll, k_roll, kAllDTypes);
  b.set_kernel(OpId::tril, k_triangle<true>, kAllDTypes);
  b.set_kernel(OpId::triu, k_triangle<false>, kAllDTypes);
  register_flex_pad(b);
}

}  // namespace ember::flex

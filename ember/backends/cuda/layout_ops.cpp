// cat, stack, flip, roll and repeat on CUDA: each is one or a few strided copies between views
// (copy_ops.cpp's kernel), the pieces laid out as the host kernels lay them (flex/layout.cpp).
#include <algorithm>

#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/fallback.h"
#include "ember/backends/flex/copy.h"
#include "ember/backends/flex/loops.h"
#include "ember/shape.h"

namespace ember::cuda {
namespace {

using flex::view_of;

Tensor narrow_view(const Tensor& t, int64_t dim, int64_t start, int64_t len) {
  Shape s = t.shape();
  s[size_t(dim)] = len;
  return view_of(t, s, t.strides(), t.offset() + start * t.stride(dim));
}

TensorList k_cat(const OpCall& c) {
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  const int64_t dim = wrap_dim(c.attrs.i[0], out.dim(), "cat");
  int64_t off = 0;
  for (const Tensor& t : c.inputs) {
    if ((t.dim() == 1 && t.size(0) == 0) || t.numel() == 0) continue;  // legacy empty 1-d
    copy_into(narrow_view(out, dim, off, t.size(dim)), t, "cat");
    off += t.size(dim);
  }
  return {out};
}

TensorList k_stack(const OpCall& c) {
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  const int64_t dim = wrap_dim(c.attrs.i[0], out.dim(), "stack");
  Shape s = out.shape(), st = out.strides();
  s.erase(size_t(dim));
  st.erase(size_t(dim));
  for (size_t i = 0; i < c.inputs.size(); ++i)
    copy_into(view_of(out, s, st, out.offset() + int64_t(i) * out.stride(dim)), c.inputs[i],
              "stack");
  return {out};
}

// A view of x with the flipped dims' strides negated, copied out.
TensorList k_flip(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  Shape st = x.strides();
  int64_t off = x.offset();
  if (x.dim() > 0)
    for (int64_t d : c.attrs.ints) {
      const int64_t w = wrap_dim(d, x.dim(), "flip"), n = x.size(w);
      off += (n - 1) * st[size_t(w)];
      st[size_t(w)] = -st[size_t(w)];
    }
  copy_into(out, view_of(x, x.shape(), st, off), "flip");
  return {out};
}

// Per rolled dim the last s elements move to the front: one copy per combination of halves.
TensorList k_roll(const OpCall& c) {
  const Attrs& a = c.attrs;
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  Tensor src = c.inputs[0], dst = out;
  Shape dims = a.ints2;
  if (dims.empty()) {  // the flattened tensor
    if (!src.is_contiguous()) src = src.contiguous();
    src = view_of(src, {src.numel()}, {1}, src.offset());
    dst = view_of(out, {out.numel()}, {1}, out.offset());
    dims = {0};
  }
  std::vector<int64_t> shift(size_t(std::max<int64_t>(src.dim(), 1)), 0);
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
      const bool front = mask >> j & 1;
      sv = narrow_view(sv, d, front ? n - s : 0, front ? s : n - s);
      dv = narrow_view(dv, d, front ? 0 : s, front ? s : n - s);
    }
    copy_into(dv, sv, "roll");
  }
  return {out};
}

// out viewed as [r0, s0, r1, s1, ...] (size-1 entries left out) takes x broadcast over the r's.
TensorList k_repeat(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  const Shape& reps = c.attrs.ints;
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  const size_t off = reps.size() - size_t(x.dim());
  Shape sizes, dst_st, src_st;
  for (size_t i = 0; i < reps.size(); ++i) {
    const int64_t s = i < off ? 1 : x.size(int64_t(i - off));
    if (reps[i] != 1) {
      sizes.push_back(reps[i]);
      dst_st.push_back(s * out.stride(int64_t(i)));
      src_st.push_back(0);
    }
    if (s != 1) {
      sizes.push_back(s);
      dst_st.push_back(out.stride(int64_t(i)));
      src_st.push_back(x.stride(int64_t(i - off)));
    }
  }
  if (sizes.size() > 8) return detail::run_host_fallback(c);  // the copy kernel's dims
  copy_into(view_of(out, sizes, dst_st, out.offset()), view_of(x, sizes, src_st, x.offset()),
            "repeat");
  return {out};
}

}  // namespace

void register_layout_kernels(BackendImpl& b) {
  b.set_kernel(OpId::cat, k_cat, kAllDTypes);
  b.set_kernel(OpId::stack, k_stack, kAllDTypes);
  b.set_kernel(OpId::flip, k_flip, kAllDTypes);
  b.set_kernel(OpId::roll, k_roll, kAllDTypes);
  b.set_kernel(OpId::repeat, k_repeat, kAllDTypes);
}

}  // namespace ember::cuda

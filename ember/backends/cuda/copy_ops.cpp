// The copy family on CUDA: copy (fresh or into a destination), contiguous, cast, empty and full,
// all through the one strided copy-and-cast kernel of copy_kernel.cu. Dims are coalesced first
// (a contiguous tensor is one dim), so most launches index a single dim.
#include <cstring>

#include "ember/backends/cuda/copy_kernel.h"
#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/flex/loops.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {

// The element range [lo, hi] a view reaches in its storage.
std::pair<int64_t, int64_t> reach(const Tensor& t) {
  int64_t lo = t.offset(), hi = t.offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t span = (t.size(d) - 1) * t.stride(d);
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi};
}

TensorList k_copy(const OpCall& c) {
  if (c.inputs.size() == 1) {
    Tensor out = flex::new_output(c);
    copy_into(out, c.inputs[0], "copy");
    return {out};
  }
  const Tensor& dst = c.inputs[0];
  Tensor src = c.inputs[1];
  // x[1:].copy_(x[:-1]): an overlapping source is copied out first (the kernel has no order).
  if (dst.numel() && src.numel() && src.is_alias_of(dst) && !detail::is_constant(src)) {
    auto [dl, dh] = reach(dst);
    auto [sl, sh] = reach(src);
    if (dl <= sh && sl <= dh) {
      Tensor tmp = detail::empty_tensor(src.shape(), src.dtype(), src.device().without_layers());
      copy_into(tmp, src, "copy");
      src = tmp;
    }
  }
  copy_into(dst, src, "copy");
  return {dst};
}

TensorList k_contiguous(const OpCall& c) {
  if (c.inputs[0].is_contiguous() && c.out.empty()) return {c.inputs[0]};
  Tensor out = flex::new_output(c);
  copy_into(out, c.inputs[0], "contiguous");
  return {out};
}

TensorList k_cast(const OpCall& c) {
  Tensor out = flex::new_output(c);
  copy_into(out, c.inputs[0], "cast");
  return {out};
}

TensorList k_empty(const OpCall& c) { return {flex::new_output(c)}; }

TensorList k_full(const OpCall& c) {
  Tensor out = flex::new_output(c);
  copy_into(out, detail::constant_tensor(c.attrs.s[0], out.dtype(), out.device(), false), "full");
  return {out};
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src, const char* op) {
  if (dst.numel() == 0) return;
  CopyArgs a;
  a.numel = dst.numel();
  a.dst_dtype = int(dst.dtype());
  a.src_dtype = int(src.dtype());
  const bool scalar = detail::is_constant(src);
  // Dims from the innermost out, size-1 dims dropped, src broadcast (stride 0); then adjacent
  // dims merged where both operands step through them as one.
  int64_t sizes[64], ds[64], ss[64];
  int n = 0;
  const int64_t nd = dst.dim(), off = nd - src.dim();
  for (int64_t d = nd - 1; d >= 0; --d) {
    const int64_t sz = dst.size(d);
    if (sz == 1) continue;
    const int64_t sd = d - off;
    const int64_t sst = scalar || sd < 0 || src.size(sd) == 1 ? 0 : src.stride(sd);
    if (n > 0 && ds[n - 1] * sizes[n - 1] == dst.stride(d) && ss[n - 1] * sizes[n - 1] == sst) {
      sizes[n - 1] *= sz;
      continue;
    }
    sizes[n] = sz, ds[n] = dst.stride(d), ss[n] = sst, ++n;
  }
  if (n > CopyArgs::kMaxDims)
    detail::throw_not_implemented(op, "a strided copy over " + std::to_string(n) +
                                          " dims that do not merge (the cuda kernel takes " +
                                          std::to_string(CopyArgs::kMaxDims) + ")");
  a.nd = n;
  for (int i = 0; i < n; ++i)  // innermost last, as the kernel walks them
    a.sizes[i] = sizes[n - 1 - i], a.dst_strides[i] = ds[n - 1 - i], a.src_strides[i] = ss[n - 1 - i];
  a.dst = device_ptr(dst);
  if (scalar) {
    std::memcpy(a.scalar, src.impl()->storage->inline_bytes, sizeof a.scalar);
    a.src = nullptr;
  } else {
    a.src = device_ptr(src);
  }
  const int dev = dst.device().index();
  set_device(dev);
  check(launch_copy(a, stream_handle(nullptr, dev)), op, "copy kernel launch");
  after_launch(op, dev);
}

void register_copy_kernels(BackendImpl& b) {
  b.set_kernel(OpId::copy, k_copy, kAllDTypes);
  b.set_kernel(OpId::contiguous, k_contiguous, kAllDTypes);
  b.set_kernel(OpId::cast, k_cast, kAllDTypes);
  b.set_kernel(OpId::empty, k_empty, kAllDTypes);
  b.set_kernel(OpId::full, k_full, kAllDTypes);
}

}  // namespace ember::cuda

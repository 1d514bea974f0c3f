// index_select, gather, scatter, scatter_add, index_add and embedding on CUDA, and max pooling with
// indices (what max pooling's gradient asks for, and the dilated or ceil_mode windows cuDNN has no
// form of): the kernels of index_kernel.cu. An index out of range fails the launch's status word
// and raises the host's IndexError at the next sync; nothing is written for it. Calls these kernels
// do not cover (0-d operands, more than 8 dims, integer atomics other than int32/int64) take
// the host fallback.
#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/index_kernel.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/cuda/status.h"
#include "ember/backends/fallback.h"
#include "ember/backends/flex/loops.h"
#include "ember/error.h"
#include "ember/ops/nn_common.h"
#include "ember/shape.h"

namespace ember::cuda {
namespace {

// An int64 copy of an int32 index (an int64 one as it is).
Tensor index_i64(const Tensor& index, Device dev, const char* op) {
  if (index.dtype() == DType::I64) return index;
  if (index.dtype() != DType::I32)
    detail::throw_dtype(
        op, "expected an int64 or int32 index, found " + std::string(dtype_name(index.dtype())));
  Tensor t = detail::empty_tensor(index.shape(), DType::I64, dev);
  copy_into(t, index, op);
  return t;
}

StatusCheck index_check(const char* op, int64_t n, int64_t dim) {
  return [op, n, dim](int32_t, int64_t j) {
    detail::throw_index(op, "index " + std::to_string(j) + " is out of bounds for dim " +
                                std::to_string(dim) + " with size " + std::to_string(n));
  };
}

// The walk over `grid` (a shape) with the operands' strides; dims of `idx_dims` only (others 0).
bool fill(IndexArgs& a, const Shape& grid, const Tensor& idx, bool idx_along_dim_only,
          const Tensor& src, const Tensor& dst, int64_t dim) {
  if (grid.size() > size_t(IndexArgs::kMaxDims)) return false;
  a.nd = int(grid.size());
  a.dim = int(dim);
  a.numel = numel_of(grid);
  for (int d = 0; d < a.nd; ++d) {
    a.sizes[d] = grid[size_t(d)];
    a.idx_st[d] = idx_along_dim_only ? (d == dim ? idx.stride(0) : 0) : idx.stride(d);
    a.src_st[d] = src.stride(d);
    a.dst_st[d] = dst.stride(d);
  }
  a.idx = static_cast<const int64_t*>(device_ptr(idx));
  a.src = device_ptr(src);
  a.dst = device_ptr(dst);
  a.dtype = int(dst.dtype());
  return true;
}

enum class Walk { Gather, Scatter, ScatterAdd };

TensorList launch(const OpCall& c, IndexArgs& a, Walk w, const Tensor& out, int64_t dim) {
  const char* op = op_name(c.op);
  const int dev = c.device.index();
  set_device(dev);
  a.status = status_slot(dev, index_check(op, a.n, dim));
  void* s = stream_handle(nullptr, dev);
  check(w == Walk::ScatterAdd ? launch_scatter_add(a, s)
        : w == Walk::Scatter  ? launch_scatter(a, s)
                              : launch_gather(a, s),
        op, "index kernel launch");
  after_launch(op, dev);
  return {out};
}

TensorList k_gather(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  if (x.dim() == 0 || c.inputs[1].dim() == 0) return detail::run_host_fallback(c);
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  const Device dev = c.device.without_layers();
  const int64_t dim = wrap_dim(c.attrs.i[0], x.dim(), "gather");
  const Tensor idx = index_i64(c.inputs[1], dev, "gather");
  IndexArgs a;
  a.n = x.size(dim);
  if (!fill(a, idx.shape(), idx, false, x, out, dim)) return detail::run_host_fallback(c);
  return launch(c, a, Walk::Gather, out, dim);
}

TensorList k_index_select(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  if (x.dim() == 0) return detail::run_host_fallback(c);
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  const Device dev = c.device.without_layers();
  const int64_t dim = wrap_dim(c.attrs.i[0], x.dim(), "index_select");
  const Tensor idx = index_i64(c.inputs[1], dev, "index_select").reshape({-1});
  IndexArgs a;
  a.n = x.size(dim);
  if (!fill(a, out.shape(), idx, true, x, out, dim)) return detail::run_host_fallback(c);
  return launch(c, a, Walk::Gather, out, dim);
}

// embedding: weight rows by index, the gather of index_select along dim 0 of the weight, over
// the [indices, dim] grid (its errors name embedding).
TensorList k_embedding(const OpCall& c) {
  const Tensor& w = c.inputs[1];
  Tensor out = flex::new_output(c);
  if (out.numel() == 0) return {out};
  const Device dev = c.device.without_layers();
  const Tensor idx = index_i64(c.inputs[0], dev, "embedding").reshape({-1});
  const Tensor rows = out.reshape({idx.numel(), w.size(1)});
  IndexArgs a;
  a.n = w.size(0);
  fill(a, rows.shape(), idx, true, w, rows, 0);
  return launch(c, a, Walk::Gather, out, 0);
}

// scatter_add (index shaped like the walk) and index_add (a 1-d index along dim, src's shape).
TensorList k_scatter_add(const OpCall& c) {
  const Tensor &x = c.inputs[0], &src = c.inputs[2];
  const bool index_add = c.op == OpId::index_add;
  if (x.dim() == 0 || src.dim() == 0 || c.inputs[1].dim() == 0 ||
      !scatter_add_dtype(int(x.dtype())))
    return detail::run_host_fallback(c);
  Tensor out = flex::new_output(c);
  copy_into(out, x, op_name(c.op));
  const Device dev = c.device.without_layers();
  const int64_t dim = wrap_dim(c.attrs.i[0], x.dim(), op_name(c.op));
  Tensor idx = index_i64(c.inputs[1], dev, op_name(c.op));
  if (idx.numel() == 0 || src.numel() == 0) return {out};
  // src in out's dtype (index_add casts like torch's add).
  Tensor s = src;
  if (s.dtype() != out.dtype()) {
    s = detail::empty_tensor(src.shape(), out.dtype(), dev);
    copy_into(s, src, op_name(c.op));
  }
  IndexArgs a;
  a.n = out.size(dim);
  if (index_add) {
    idx = idx.reshape({-1});
    // Integer tensors take the alpha truncated, as the host kernel does.
    a.alpha =
        is_floating(out.dtype()) ? c.attrs.s[0].to_double() : double(c.attrs.s[0].to<int64_t>());
  }
  if (!fill(a, index_add ? s.shape() : idx.shape(), idx, index_add, s, out, dim))
    return detail::run_host_fallback(c);
  return launch(c, a, Walk::ScatterAdd, out, dim);
}

// scatter: src (or the scalar value, broadcast) stored at the index along dim, over the index's
// shape; repeated targets keep one of their writes (torch leaves which unspecified too).
TensorList k_scatter(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  if (x.dim() == 0 || c.inputs[1].dim() == 0 || (c.inputs.size() > 2 && c.inputs[2].dim() == 0))
    return detail::run_host_fallback(c);
  Tensor out = flex::new_output(c);
  copy_into(out, x, "scatter");
  const Device dev = c.device.without_layers();
  const int64_t dim = wrap_dim(c.attrs.i[0], x.dim(), "scatter");
  const Tensor idx = index_i64(c.inputs[1], dev, "scatter");
  if (idx.numel() == 0) return {out};
  Tensor s;
  if (c.inputs.size() > 2 && c.inputs[2].dtype() == out.dtype()) {
    s = c.inputs[2];
  } else {  // the value, or src in out's dtype
    s = detail::empty_tensor(c.inputs.size() > 2 ? c.inputs[2].shape() : idx.shape(), out.dtype(),
                             dev);
    copy_into(s,
              c.inputs.size() > 2 ? c.inputs[2]
                                  : detail::constant_tensor(c.attrs.s[0], out.dtype(), dev, false),
              "scatter");
  }
  IndexArgs a;
  a.n = out.size(dim);
  if (!fill(a, idx.shape(), idx, false, s, out, dim)) return detail::run_host_fallback(c);
  return launch(c, a, Walk::Scatter, out, dim);
}

}  // namespace

TensorList max_pool_with_indices(const OpCall& c) {
  const char* op = op_name(c.op);
  const int nd = c.op == OpId::max_pool2d ? 2 : 1;
  const ops::PoolParams k = ops::pool_params(op, c.attrs, nd, true);
  const Tensor x = c.inputs[0].is_contiguous() ? c.inputs[0] : c.inputs[0].contiguous();
  Tensor out = flex::new_output(c);
  const bool with_idx = c.attrs.b[1];
  Tensor idx = with_idx ? flex::new_output(c, 1) : Tensor();
  const Shape& os = c.meta.m[0].shape;
  MaxPoolArgs a;
  a.x = device_ptr(x);
  a.y = device_ptr(out);
  a.idx = with_idx ? static_cast<int64_t*>(device_ptr(idx)) : nullptr;
  a.dtype = int(x.dtype());
  a.w = x.size(-1), a.h = nd == 2 ? x.size(-2) : 1;
  a.ow = os.back(), a.oh = nd == 2 ? os[os.size() - 2] : 1;
  a.planes = a.h * a.w > 0 ? x.numel() / (a.h * a.w) : 0;
  a.kh = k.kh, a.kw = k.kw, a.sh = k.sh, a.sw = k.sw, a.ph = k.ph, a.pw = k.pw, a.dh = k.dh,
  a.dw = k.dw;
  const int dev = c.device.index();
  set_device(dev);
  check(launch_max_pool(a, stream_handle(nullptr, dev)), op, "max pooling kernel launch");
  after_launch(op, dev);
  if (with_idx) return {out, idx};
  return {out};
}

void register_index_kernels(BackendImpl& b) {
  b.set_kernel(OpId::gather, k_gather, kAllDTypes);
  b.set_kernel(OpId::index_select, k_index_select, kAllDTypes);
  b.set_kernel(OpId::embedding, k_embedding, kIntDTypes);
  b.set_kernel(OpId::scatter, k_scatter, kAllDTypes);
  b.set_kernel(OpId::scatter_add, k_scatter_add, kAllDTypes);
  b.set_kernel(OpId::index_add, k_scatter_add, kAllDTypes);
}

}  // namespace ember::cuda

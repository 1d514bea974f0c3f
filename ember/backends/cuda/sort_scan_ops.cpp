// sort, argsort, topk, cumsum and cumprod on CUDA: CUB's stable segmented sort and scan by key
// (sort_kernel.cu, scan_kernel.cu) over lanes laid out contiguously, the op's dim last. A
// lane already contiguous along the dim is read in place; otherwise one strided copy moves the
// dim last first. Sorting writes the op's result layout directly; scans write lanes and, when
// the dim was not last, one copy puts them back.
#include <vector>

#include "ember/backends/cuda/cuda_kernels.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/cuda/sort_scan_kernel.h"
#include "ember/backends/flex/loops.h"
#include "ember/error.h"
#include "ember/shape.h"

namespace ember::cuda {
namespace {

// Scratch tensors of one launch, kept until the call returns: their blocks go back to the
// stream-ordered pool after the work queued on the stream, so they outlive the kernels.
struct Scratch {
  Device device;
  std::vector<Tensor> held;
  static void* take(void* self, size_t bytes) {
    auto* s = static_cast<Scratch*>(self);
    s->held.push_back(detail::empty_tensor({int64_t(bytes)}, DType::U8, s->device));
    return device_ptr(s->held.back());
  }
  DeviceAlloc alloc() { return {&Scratch::take, this}; }
};

// x viewed as [outer, n, inner] around dim d.
struct Lanes {
  int64_t d = 0, outer = 1, n = 1, inner = 1;
};
Lanes lanes_of(const Tensor& x, int64_t dim_attr, const char* op) {
  Lanes l;
  if (x.dim() == 0) return l;
  l.d = wrap_dim(dim_attr, x.dim(), op);
  l.n = x.size(l.d);
  for (int64_t i = l.d + 1; i < x.dim(); ++i) l.inner *= x.size(i);
  for (int64_t i = 0; i < l.d; ++i) l.outer *= x.size(i);
  return l;
}

// The permutation moving dim d last.
Shape dim_last(int64_t nd, int64_t d) {
  Shape p;
  for (int64_t i = 0; i < nd; ++i)
    if (i != d) p.push_back(i);
  p.push_back(d);
  return p;
}

// x's elements as contiguous lanes along dim d (x itself when they already are).
Tensor lane_major(const Tensor& x, const Lanes& l, Device dev, const char* op) {
  if (x.dim() == 0 || (l.inner == 1 && x.is_contiguous())) return x;
  const Tensor moved = x.permute(dim_last(x.dim(), l.d));
  Tensor t = detail::empty_tensor(moved.shape(), x.dtype(), dev);
  copy_into(t, moved, op);
  return t;
}

// A caller-placed output that is not packed is written through a packed temporary.
Tensor packed(const Tensor& out, Device dev) {
  return out.is_contiguous() ? out : detail::empty_tensor(out.shape(), out.dtype(), dev);
}
void settle(const Tensor& out, const Tensor& written, const char* op) {
  if (out.impl() != written.impl()) copy_into(out, written, op);
}

TensorList k_sort(const OpCall& c) {
  const char* op = op_name(c.op);
  const bool values = c.op != OpId::argsort;
  Tensor vals = values ? flex::new_output(c, 0) : Tensor();
  Tensor idx = flex::new_output(c, values ? 1 : 0);
  const Tensor& x = c.inputs[0];
  const Lanes l = lanes_of(x, c.attrs.i[0], op);
  const bool topk = c.op == OpId::topk;
  // sort/argsort keep all n, descending when b[0]; topk keeps k, largest first when b[0].
  const int64_t k = topk && x.dim() > 0 ? c.attrs.i[1] : l.n;
  if (x.numel() == 0 || k == 0) return values ? TensorList{vals, idx} : TensorList{idx};
  const Device dev = c.device.without_layers();
  const Tensor xl = lane_major(x, l, dev, op);
  Tensor pv = values ? packed(vals, dev) : Tensor(), pi = packed(idx, dev);
  SortArgs a;
  a.x = device_ptr(xl);
  a.dtype = int(x.dtype());
  a.lanes = l.outer * l.inner, a.n = l.n, a.k = k, a.inner = l.inner;
  a.descending = c.attrs.b[0];
  a.vals = values ? device_ptr(pv) : nullptr;
  a.idx = static_cast<int64_t*>(device_ptr(pi));
  Scratch s{dev, {}};
  set_device(dev.index());
  check(launch_sort(a, s.alloc(), stream_handle(nullptr, dev.index())), op, "CUB segmented sort");
  after_launch(op, dev.index());
  if (values) settle(vals, pv, op);
  settle(idx, pi, op);
  return values ? TensorList{vals, idx} : TensorList{idx};
}

bool scans_natively(DType d) {
  return d == DType::I64 || d == DType::F16 || d == DType::BF16 || d == DType::F32 ||
         d == DType::F64;
}

TensorList k_scan(const OpCall& c) {
  const char* op = op_name(c.op);
  Tensor out = flex::new_output(c);
  const Tensor& x = c.inputs[0];
  if (x.numel() == 0) return {out};
  const Device dev = c.device.without_layers();
  // torch casts to the result dtype first, then scans; integers accumulate in int64.
  const DType acc = scans_natively(out.dtype()) ? out.dtype() : DType::I64;
  const Lanes l = lanes_of(x, c.attrs.i[0], op);
  Tensor xl = lane_major(x, l, dev, op);
  if (xl.dtype() != acc) {
    Tensor t = detail::empty_tensor(xl.shape(), acc, dev);
    copy_into(t, xl, op);
    xl = t;
  }
  // Written in place when the result is packed lanes of the accumulator's dtype.
  const bool direct = out.dtype() == acc && out.is_contiguous() && (x.dim() == 0 || l.inner == 1);
  Tensor res = direct ? out : detail::empty_tensor(xl.shape(), acc, dev);
  ScanArgs a;
  a.x = device_ptr(xl);
  a.out = device_ptr(res);
  a.dtype = int(acc);
  a.lanes = l.outer * l.inner, a.n = l.n;
  a.prod = c.op == OpId::cumprod;
  Scratch s{dev, {}};
  set_device(dev.index());
  check(launch_scan(a, s.alloc(), stream_handle(nullptr, dev.index())), op, "CUB scan by key");
  after_launch(op, dev.index());
  if (!direct) {
    // res holds the lanes with the dim last: the result viewed the same way takes them.
    copy_into(x.dim() == 0 ? out : out.permute(dim_last(x.dim(), l.d)), res, op);
  }
  return {out};
}

}  // namespace

void register_sort_scan_kernels(BackendImpl& b) {
  for (OpId op : {OpId::sort, OpId::argsort, OpId::topk}) b.set_kernel(op, k_sort, kAllDTypes);
  for (OpId op : {OpId::cumsum, OpId::cumprod}) b.set_kernel(op, k_scan, kAllDTypes);
}

}  // namespace ember::cuda

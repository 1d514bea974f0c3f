#include "ember/backends/flex/loops.h"

#include <string>

#include "ember/backends/flex/thread_pool.h"

namespace ember::flex {

Plan make_plan(const Tensor& out, std::span<const Tensor> ins) {
  Plan p;
  p.nops = int(ins.size()) + 1;
  if (p.nops > kMaxOperands) ember::detail::throw_value("flex", "too many operands");
  const TensorImpl& oi = *out.impl();
  const Shape& os = oi.shape;
  const size_t nd = os.size();
  p.numel = oi.numel;
  // Byte strides of every operand over out's dims (0 where an input broadcasts).
  int64_t st[kMaxOperands][kMaxDims];
  const int64_t osz = int64_t(itemsize(oi.dtype));
  for (size_t d = 0; d < nd; ++d) st[0][d] = oi.strides[d] * osz;
  p.base[0] = oi.data();
  // The common case, contiguous operands of out's shape, is one flat run (no coalescing).
  bool flat = oi.contiguous;
  for (size_t k = 0; flat && k < ins.size(); ++k) {
    const TensorImpl& t = *ins[k].impl();
    flat = t.contiguous && t.shape == os;
  }
  if (flat) {
    p.shape.push_back(p.numel);
    p.strides[0].push_back(p.numel > 1 ? osz : 0);
    for (size_t k = 0; k < ins.size(); ++k) {
      const TensorImpl& t = *ins[k].impl();
      p.strides[k + 1].push_back(p.numel > 1 ? int64_t(itemsize(t.dtype)) : 0);
      p.base[k + 1] = t.numel ? t.data() : nullptr;
    }
    return p;
  }
  for (size_t k = 0; k < ins.size(); ++k) {
    const TensorImpl& t = *ins[k].impl();
    const Shape& ts = t.shape;
    const int64_t tsz = int64_t(itemsize(t.dtype));
    const size_t off = nd - ts.size();
    for (size_t d = 0; d < off; ++d) st[k + 1][d] = 0;
    for (size_t d = 0; d < ts.size(); ++d)
      st[k + 1][off + d] = ts[d] == 1 ? 0 : t.strides[d] * tsz;
    p.base[k + 1] = t.numel ? t.data() : nullptr;
  }
  // Drop size-1 dims, then merge neighbours that are contiguous for every operand.
  PlanDims& shape = p.shape;
  auto& ms = p.strides;
  for (size_t d = 0; d < nd; ++d) {
    if (os[d] == 1) continue;
    bool merge = !shape.empty();
    for (int k = 0; merge && k < p.nops; ++k) merge = ms[k].back() == st[k][d] * os[d];
    if (merge) {
      shape.back() *= os[d];
      for (int k = 0; k < p.nops; ++k) ms[k].back() = st[k][d];
    } else {
      shape.push_back(os[d]);
      for (int k = 0; k < p.nops; ++k) ms[k].push_back(st[k][d]);
    }
  }
  if (shape.empty()) {
    shape.push_back(1);
    for (int k = 0; k < p.nops; ++k) ms[k].push_back(0);
  }
  return p;
}

void run_plan(const Plan& p, InnerLoop loop, const void* ctx, int64_t grain) {
  if (p.numel == 0) return;
  const int nd = int(p.shape.size());
  const int64_t inner = p.shape[nd - 1];
  const int nops = p.nops;
  int64_t inner_strides[kMaxOperands];
  for (int k = 0; k < nops; ++k) inner_strides[k] = p.strides[k][nd - 1];
  if (nd == 1 && p.numel <= grain) {  // one run, on this thread (tiny ops)
    char* ptrs[kMaxOperands];
    for (int k = 0; k < nops; ++k) ptrs[k] = p.base[k];
    loop(ptrs, inner_strides, p.numel, ctx);
    return;
  }
  parallel_for(p.numel, grain, [&](int64_t begin, int64_t end) {
    // Position of `begin` as a multi-index over the outer dims plus an inner offset.
    int64_t idx[kMaxDims] = {0};
    int64_t rem = begin / inner, pos_inner = begin % inner;
    for (int d = nd - 2; d >= 0; --d) {
      idx[d] = rem % p.shape[d];
      rem /= p.shape[d];
    }
    char* ptrs[kMaxOperands];
    int64_t i = begin;
    while (i < end) {
      for (int k = 0; k < nops; ++k) {
        int64_t o = pos_inner * inner_strides[k];
        for (int d = 0; d < nd - 1; ++d) o += idx[d] * p.strides[k][d];
        ptrs[k] = p.base[k] ? p.base[k] + o : nullptr;
      }
      int64_t n = std::min(inner - pos_inner, end - i);
      loop(ptrs, inner_strides, n, ctx);
      i += n;
      pos_inner = 0;
      for (int d = nd - 2; d >= 0; --d) {
        if (++idx[d] < p.shape[d]) break;
        idx[d] = 0;
      }
    }
  });
}

Tensor new_output(const OpCall& c, int i) {
  const TensorMeta& m = c.meta.m[i];
  if (size_t(i) < c.out.size()) {  // placed by the caller: written in place
    const Tensor& o = c.out[size_t(i)];
    if (o.shape() != m.shape || o.dtype() != m.dtype || !o.is_contiguous())
      ember::detail::throw_value(op_name(c.op), "a placed output must be contiguous with shape " +
                                                    shape_str(m.shape) + " and dtype " +
                                                    std::string(dtype_name(m.dtype)));
    return o;
  }
  return ember::detail::empty_tensor(m.shape, m.dtype, c.device);
}

void throw_unsupported_dtype(const char* op, DType dt) {
  std::string m = "not supported for dtype " + std::string(dtype_name(dt));
  if (!is_built(dt)) {
    m += " (this build's flex kernels take only";
    for (int d = 0; (kAllDTypes >> d) != 0; ++d)
      if (is_built(DType(d))) (m += ' ') += dtype_name(DType(d));
    m += "; cast to one of them)";
  }
  ember::detail::throw_dtype(op, m);
}

}  // namespace ember::flex

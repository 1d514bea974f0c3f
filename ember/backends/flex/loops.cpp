#include "ember/backends/flex/loops.h"

#include "ember/backends/flex/thread_pool.h"

namespace ember::flex {

Plan make_plan(const Tensor& out, std::span<const Tensor> ins) {
  Plan p;
  p.nops = int(ins.size()) + 1;
  if (p.nops > kMaxOperands) ember::detail::throw_value("flex", "too many operands");
  const Shape& os = out.shape();
  const size_t nd = os.size();
  p.numel = out.numel();
  // Byte strides of every operand over out's dims (0 where an input broadcasts).
  std::array<Shape, kMaxOperands> st;
  st[0] = Shape(nd);
  for (size_t d = 0; d < nd; ++d) st[0][d] = out.strides()[d] * int64_t(out.itemsize());
  p.base[0] = out.impl()->data();
  for (size_t k = 0; k < ins.size(); ++k) {
    const Tensor& t = ins[k];
    const Shape& ts = t.shape();
    st[k + 1] = Shape(nd);
    size_t off = nd - ts.size();
    for (size_t d = 0; d < ts.size(); ++d)
      st[k + 1][off + d] = ts[d] == 1 ? 0 : t.strides()[d] * int64_t(t.itemsize());
    p.base[k + 1] = t.numel() ? t.impl()->data() : nullptr;
  }
  // Drop size-1 dims, then merge neighbours that are contiguous for every operand.
  Shape shape;
  std::array<Shape, kMaxOperands> ms;
  for (size_t d = 0; d < nd; ++d) {
    if (os[d] == 1) continue;
    bool merge = !shape.empty();
    for (int k = 0; merge && k < p.nops; ++k) merge = ms[k].back() == st[k][d] * os[d];
    if (merge) {
      shape[shape.size() - 1] *= os[d];
      for (int k = 0; k < p.nops; ++k) ms[k][ms[k].size() - 1] = st[k][d];
    } else {
      shape.push_back(os[d]);
      for (int k = 0; k < p.nops; ++k) ms[k].push_back(st[k][d]);
    }
  }
  if (shape.empty()) {
    shape.push_back(1);
    for (int k = 0; k < p.nops; ++k) ms[k].push_back(0);
  }
  p.shape = std::move(shape);
  p.strides = std::move(ms);
  return p;
}

void run_plan(const Plan& p, InnerLoop loop, const void* ctx, int64_t grain) {
  if (p.numel == 0) return;
  const int nd = int(p.shape.size());
  const int64_t inner = p.shape[nd - 1];
  const int nops = p.nops;
  int64_t inner_strides[kMaxOperands];
  for (int k = 0; k < nops; ++k) inner_strides[k] = p.strides[k][nd - 1];
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

}  // namespace ember::flex

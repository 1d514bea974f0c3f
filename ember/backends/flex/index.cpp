// flex kernels: index_select, take, gather, the scatter family and index_add. Every index is
// checked (checked_index) before anything is written.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ember/ops/modes.h"
#include "ember/backends/flex/copy.h"
#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"

namespace ember::flex {
void register_flex_masked(BackendImpl& b);  // index_mask.cpp

namespace {

// A contiguous shape seen as [outer, n, inner] around `dim`.
struct Split3 {
  int64_t outer = 1, n = 1, inner = 1;
};
Split3 split_at(const Shape& s, int64_t dim) {
  Split3 g;
  for (int64_t d = 0; d < int64_t(s.size()); ++d) {
    if (d < dim) g.outer *= s[size_t(d)];
    else if (d == dim) g.n = s[size_t(d)];
    else g.inner *= s[size_t(d)];
  }
  return g;
}

// out row (o, j) <- x row (o, idx[j]), rows of g.inner elements; parallel over rows.
template <class W>
void gather_rows(W* out, const W* x, const int64_t* idx, int64_t m, Split3 g) {
  const int64_t rows = g.outer * m, inner = g.inner;
  if (rows == 0 || inner == 0) return;
  parallel_for(rows, std::max<int64_t>(1, 32768 / inner), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const W* src = x + (r / m * g.n + idx[r % m]) * inner;
      W* dst = out + r * inner;
      if (inner == 1) *dst = *src;
      else std::memcpy(dst, src, size_t(inner) * sizeof(W));
    }
  });
}

TensorList k_index_select(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  Tensor out = new_output(c);
  const int64_t dim = wrap_dim(c.attrs.i[0], x.dim(), "index_select");
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  Tensor idx = checked_index(c.inputs[1], n, false, "index_select", dim);
  if (x.dim() == 0) {  // like torch, a 0-d input comes back as it is
    copy_into(out, x);
    return {out};
  }
  if (out.numel() == 0) return {out};
  Tensor xc = contiguous(x);
  Split3 g = split_at(xc.shape(), dim);
  EMBER_DISPATCH_WIDTH(x.dtype(), gather_rows<W>(static_cast<W*>(out.raw_data()),
                                                 static_cast<const W*>(xc.raw_data()),
                                                 idx.data_ptr<int64_t>(), idx.numel(), g));
  return {out};
}

TensorList k_take(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  Tensor out = new_output(c);
  Tensor idx = checked_index(c.inputs[1], x.numel(), true, "take", -1);
  if (out.numel() == 0) return {out};
  Tensor xc = contiguous(x);
  Split3 g{1, x.numel(), 1};
  EMBER_DISPATCH_WIDTH(x.dtype(), gather_rows<W>(static_cast<W*>(out.raw_data()),
                                                 static_cast<const W*>(xc.raw_data()),
                                                 idx.data_ptr<int64_t>(), idx.numel(), g));
  return {out};
}

// gather: operand 1 is x restrided to the index's shape with dim's stride zeroed; the loop adds
// index * (dim's byte stride) itself.
template <class W>
void gather_loop(char** p, const int64_t* s, int64_t n, const void* ctx) {
  const int64_t ds = *static_cast<const int64_t*>(ctx);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
    *reinterpret_cast<W*>(p[0] + i * s[0]) =
        *reinterpret_cast<const W*>(p[1] + i * s[1] + j * ds);
  }
}

TensorList k_gather(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  const int64_t dim = wrap_dim(c.attrs.i[0], c.inputs[0].dim(), "gather");
  Tensor x = as_1d_if_scalar(c.inputs[0]), o = as_1d_if_scalar(out);
  Tensor idx = checked_index(as_1d_if_scalar(c.inputs[1]), x.size(dim), false, "gather", dim);
  Shape st = x.strides();
  const int64_t ds = st[size_t(dim)] * int64_t(x.itemsize());
  st[size_t(dim)] = 0;
  Tensor ins[] = {view_of(x, idx.shape(), st, x.offset()), idx};
  Plan p = make_plan(o, ins);
  EMBER_DISPATCH_WIDTH(x.dtype(), run_plan(p, gather_loop<W>, &ds));
  return {out};
}

// --- scatter: reductions into out[..., index, ...] ---
enum class Reduce { Assign, Sum, Prod, Mean, Amax, Amin };

template <class C> constexpr bool is_int_v = std::is_integral_v<C> && !std::is_same_v<C, bool>;

// Integer maths wraps like torch's (in unsigned arithmetic, so it is never UB); bool sums are
// "or" and products "and"; max/min propagate NaN from the source, as torch's CPU kernels do.
struct AssignOp {
  template <class C> static C apply(C, C b) { return b; }
};
struct AddOp {
  template <class C> static C apply(C a, C b) {
    if constexpr (std::is_same_v<C, bool>) return a || b;
    else if constexpr (is_int_v<C>) return C(uint64_t(a) + uint64_t(b));
    else return a + b;
  }
};
struct MulOp {
  template <class C> static C apply(C a, C b) {
    if constexpr (std::is_same_v<C, bool>) return a && b;
    else if constexpr (is_int_v<C>) return C(uint64_t(a) * uint64_t(b));
    else return a * b;
  }
};
struct MaxOp {
  template <class C> static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return std::isnan(b) ? b : std::max(a, b);
    else return std::max(a, b);
  }
};
struct MinOp {
  template <class C> static C apply(C a, C b) {
    if constexpr (std::is_floating_point_v<C>) return std::isnan(b) ? b : std::min(a, b);
    else return std::min(a, b);
  }
};

struct ScatterCtx {
  int64_t k, out_ds, idx_ds, src_ds;
};

// Operands: out and src restrided to the index's shape with dim collapsed to 1, and the index.
// Each position walks dim serially, so colliding writes (repeated indices) stay in one thread.
template <class T, class Op>
void scatter_loop(char** p, const int64_t* s, int64_t n, const void* vctx) {
  using C = compute_t<T>;
  const ScatterCtx& c = *static_cast<const ScatterCtx*>(vctx);
  for (int64_t i = 0; i < n; ++i) {
    char* o = p[0] + i * s[0];
    const char* ip = p[2] + i * s[2];
    const char* sp = p[1] + i * s[1];
    for (int64_t t = 0; t < c.k; ++t) {
      const int64_t j = *reinterpret_cast<const int64_t*>(ip + t * c.idx_ds);
      T* d = reinterpret_cast<T*>(o + j * c.out_ds);
      *d = T(Op::apply(C(*d), C(*reinterpret_cast<const T*>(sp + t * c.src_ds))));
    }
  }
}

// out[..., idx[p], ...] = op(out[...], src[p]) for every index position p. out, idx and src are
// at least 1-d; src is either shaped like idx (or larger) or 0-d (one value for all).
void scatter_apply(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t dim,
                   Reduce r) {
  Shape q = idx.shape();
  const int64_t k = q[size_t(dim)];
  q[size_t(dim)] = 1;
  const int64_t isz = int64_t(out.itemsize());
  ScatterCtx ctx{k, out.strides()[size_t(dim)] * isz, idx.strides()[size_t(dim)] * 8, 0};
  Tensor sv;
  if (src.dim() == 0) {
    sv = view_of(src, q, Shape(q.size(), 0), src.offset());
  } else {
    ctx.src_ds = src.strides()[size_t(dim)] * isz;
    sv = view_of(src, q, src.strides(), src.offset());
  }
  Tensor ins[] = {sv, view_of(idx, q, idx.strides(), idx.offset())};
  Plan p = make_plan(view_of(out, q, out.strides(), out.offset()), ins);
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(k, 1));
  EMBER_DISPATCH_ALL(out.dtype(), "scatter", {
    switch (r) {
      case Reduce::Assign: run_plan(p, scatter_loop<T, AssignOp>, &ctx, grain); break;
      case Reduce::Sum: case Reduce::Mean: run_plan(p, scatter_loop<T, AddOp>, &ctx, grain); break;
      case Reduce::Prod: run_plan(p, scatter_loop<T, MulOp>, &ctx, grain); break;
      case Reduce::Amax: run_plan(p, scatter_loop<T, MaxOp>, &ctx, grain); break;
      case Reduce::Amin: run_plan(p, scatter_loop<T, MinOp>, &ctx, grain); break;
    }
  });
}

// The value a target starts from when include_self is false.
Scalar identity_of(Reduce r, DType d) {
  if (r == Reduce::Prod) return Scalar(1);
  if (r != Reduce::Amax && r != Reduce::Amin) return Scalar(0);
  const bool hi = r == Reduce::Amin;
  if (d == DType::Bool) return Scalar(hi);
  if (is_floating(d)) return Scalar(hi ? INFINITY : -INFINITY);
  Scalar v;
  EMBER_DISPATCH_INT(d, "scatter_reduce", {
    v = Scalar(int64_t(hi ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest()));
  });
  return v;
}

// mean: out /= count (floor division for integers, like torch); count 0 leaves out as it is.
void divide_by_counts(const Tensor& out, const Tensor& counts) {
  const int64_t* cnt = counts.data_ptr<int64_t>();
  EMBER_DISPATCH_NUMERIC(out.dtype(), "scatter_reduce", {
    T* o = static_cast<T*>(out.raw_data());
    parallel_for(out.numel(), 32768, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t k = cnt[i];
        if (k <= 1) continue;
        if constexpr (std::is_integral_v<T>) {
          const int64_t a = int64_t(o[i]);
          o[i] = T(a / k - (a % k != 0 && a < 0 ? 1 : 0));
        } else {
          using C = compute_t<T>;
          o[i] = T(C(o[i]) / C(k));
        }
      }
    });
  });
}

Tensor scatter_impl(const OpCall& c, Reduce r, bool include_self) {
  const char* name = op_name(c.op);
  const Tensor& x = c.inputs[0];
  Tensor out = new_output(c);
  copy_into(out, x);
  const Tensor& index = c.inputs[1];
  if (index.numel() == 0) return out;
  const int64_t dim = wrap_dim(c.attrs.i[0], x.dim(), name);
  Tensor o = as_1d_if_scalar(out);
  Tensor idx = checked_index(as_1d_if_scalar(index), o.size(dim), false, name, dim);
  Tensor src = c.inputs.size() > 2 ? as_1d_if_scalar(c.inputs[2])
                                   : full({}, c.attrs.s[0], {x.dtype(), c.device});
  if (!include_self) {  // targets start from the reduction's identity instead of x
    Tensor id = full({}, identity_of(r, x.dtype()), {x.dtype(), c.device});
    scatter_apply(o, idx, id, dim, Reduce::Assign);
  }
  scatter_apply(o, idx, src, dim, r);
  if (r == Reduce::Mean) {
    Tensor counts = full(out.shape(), int64_t(include_self ? 1 : 0), {DType::I64, c.device});
    scatter_apply(as_1d_if_scalar(counts), idx, full({}, int64_t(1), {DType::I64, c.device}), dim,
                  Reduce::Sum);
    divide_by_counts(out, counts);
  }
  return out;
}

TensorList k_scatter(const OpCall& c) { return {scatter_impl(c, Reduce::Assign, true)}; }
TensorList k_scatter_add(const OpCall& c) { return {scatter_impl(c, Reduce::Sum, true)}; }
TensorList k_scatter_reduce(const OpCall& c) {
  constexpr Reduce by_mode[] = {Reduce::Sum, Reduce::Prod, Reduce::Mean, Reduce::Amax,
                                 Reduce::Amin};  // ops::ScatterReduce order
  const Reduce r = by_mode[c.attrs.mode];
  return {scatter_impl(c, r, c.attrs.b[0])};
}

// index_add: out[o, idx[j], i] += alpha * src[o, j, i]. Work is split by destination: over o,
// and, when there are few o, over groups of destination rows (idx[j] % parts), each group walking
// j in order. Whole rows stay in one thread, so repeated indices never race and sums keep
// torch's order.
TensorList k_index_add(const OpCall& c) {
  const Tensor& x = c.inputs[0];
  const int64_t dim = wrap_dim(c.attrs.i[0], x.dim(), "index_add");
  Tensor out = new_output(c);
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  Tensor idx = checked_index(c.inputs[1], n, false, "index_add", dim);
  copy_into(out, x);
  const int64_t m = idx.numel();
  if (m == 0 || out.numel() == 0) return {out};
  Tensor src = contiguous(c.inputs[2]);
  const Split3 g = x.dim() == 0 ? Split3{} : split_at(out.shape(), dim);
  const int64_t* ip = idx.data_ptr<int64_t>();
  const bool big = g.outer * m * g.inner >= 65536;
  const int64_t parts = big && g.outer < 4 ? std::min<int64_t>(g.n, 4 * num_threads()) : 1;
  EMBER_DISPATCH_ALL(x.dtype(), "index_add", {
    using C = compute_t<T>;
    const C alpha = c.attrs.s[0].to<C>();
    T* o = static_cast<T*>(out.raw_data());
    const T* s = static_cast<const T*>(src.raw_data());
    parallel_for(g.outer * parts, big ? 1 : g.outer * parts, [&](int64_t b, int64_t e) {
      for (int64_t w = b; w < e; ++w) {
        const int64_t oi = w / parts, part = w % parts;
        for (int64_t j = 0; j < m; ++j) {
          if (parts > 1 && ip[j] % parts != part) continue;
          T* dst = o + (oi * g.n + ip[j]) * g.inner;
          const T* sp = s + (oi * m + j) * g.inner;
          for (int64_t i = 0; i < g.inner; ++i)
            dst[i] = T(AddOp::apply(C(dst[i]), MulOp::apply(alpha, C(sp[i]))));
        }
      }
    });
  });
  return {out};
}

}  // namespace

void register_flex_index(BackendImpl& b) {
  b.set_kernel(OpId::index_select, k_index_select, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::take, k_take, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::gather, k_gather, kAllDTypes | kComplexDTypes);
  b.set_kernel(OpId::scatter, k_scatter, kAllDTypes);
  b.set_kernel(OpId::scatter_add, k_scatter_add, kAllDTypes);
  b.set_kernel(OpId::scatter_reduce, k_scatter_reduce, kAllDTypes);
  b.set_kernel(OpId::index_add, k_index_add, kAllDTypes);
  register_flex_masked(b);
}

}  // namespace ember::flex

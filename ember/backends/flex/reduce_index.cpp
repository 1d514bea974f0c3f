// flex kernels: reductions that track where the winner sits — max/min along a dim
// ((values, indices)) and argmax/argmin (along a dim, or over the flattened tensor).
// Like torch: the first occurrence wins ties, and NaN beats every number (the first NaN wins).
#include "ember/backends/flex/dim_loops.h"
#include "ember/backends/flex/reduce_kernels.h"

namespace ember::flex {
namespace {

template <class T, bool kMax>
void index_reduce(const DimView& v, T* vals, int64_t* idx) {
  using C = compute_t<T>;
  const T* xp = static_cast<const T*>(v.x.raw_data());
  // x replaces the best so far: NaN over a number, else strictly better (so the first tie stays).
  auto better = [](C x, C best) {
    bool nan_over = is_nan_value(x) && !is_nan_value(best);
    if constexpr (kMax) return nan_over || x > best;
    else return nan_over || x < best;
  };
  const int64_t n = v.n, inner = v.inner;
  for_each_lane_block(v, [&](int64_t o, int64_t j0, int64_t len) {
    constexpr int64_t kBlock = 256;
    C best[kBlock];
    int64_t at[kBlock];
    const T* base = xp + o * n * inner + j0;
    for (int64_t j = 0; j < len; ++j) {
      best[j] = C(base[j]);
      at[j] = 0;
    }
    for (int64_t r = 1; r < n; ++r) {
      const T* row = base + r * inner;
      for (int64_t j = 0; j < len; ++j) {
        C x = C(row[j]);
        if (better(x, best[j])) {
          best[j] = x;
          at[j] = r;
        }
      }
    }
    for (int64_t j = 0; j < len; ++j) {
      const int64_t out = o * inner + j0 + j;
      idx[out] = at[j];
      if (vals) vals[out] = base[at[j] * inner + j];  // the element itself: keeps -0.0 and NaN bits
    }
  });
}

}  // namespace

TensorList k_index_reduce(const OpCall& c) {
  const bool want_max = c.op == OpId::max || c.op == OpId::argmax;
  const bool values = c.op == OpId::max || c.op == OpId::min;
  const Tensor& x = c.inputs[0];
  Tensor vals = values ? new_output(c, 0) : Tensor();
  Tensor idx = new_output(c, values ? 1 : 0);
  const DimView v = c.attrs.b[1] ? dim_view(x, wrap_dim(c.attrs.i[0], x.dim(), op_name(c.op)))
                                 : flat_view(x);
  if (v.numel() > 0) {
    auto* ip = static_cast<int64_t*>(idx.raw_data());
    EMBER_DISPATCH_ALL(x.dtype(), op_name(c.op), {
      T* vp = values ? static_cast<T*>(vals.raw_data()) : nullptr;
      if (want_max) index_reduce<T, true>(v, vp, ip);
      else index_reduce<T, false>(v, vp, ip);
    });
  }
  if (values) return {vals, idx};
  return {idx};
}

}  // namespace ember::flex

#pragma once
// Loops for ops that work along one dim (index reductions, scans, sorting, order statistics):
// the input is seen as a contiguous [outer, n, inner] block, and work is split into lanes (one
// (outer, inner) position each) handed out in blocks of consecutive inner positions, so a sweep
// along the dim reads whole rows of memory rather than one element per cache line.
#include <algorithm>
#include <cstdint>

#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"

namespace ember::flex {

/// A contiguous tensor seen as [outer, n, inner] around one dim.
struct DimView {
  Tensor x;  // contiguous
  int64_t outer = 1, n = 1, inner = 1;
  int64_t numel() const { return outer * n * inner; }
};

/// `t` around dim `dim` (already wrapped; any dim of a 0-d tensor is [1, 1, 1]).
inline DimView dim_view(const Tensor& t, int64_t dim) {
  DimView v;
  v.x = t.contiguous();
  const Shape& s = t.shape();
  for (int64_t d = 0; d < int64_t(s.size()); ++d) {
    if (d < dim) v.outer *= s[size_t(d)];
    else if (d == dim) v.n = s[size_t(d)];
    else v.inner *= s[size_t(d)];
  }
  return v;
}

/// `t` flattened: [1, numel, 1].
inline DimView flat_view(const Tensor& t) {
  DimView v;
  v.x = t.contiguous();
  v.n = t.numel();
  return v;
}

/// Calls f(o, j0, len) for every block of up to 256 consecutive inner positions [j0, j0 + len)
/// of every outer index o, in parallel when there is enough work. Lanes of one call never
/// overlap another's, so f may write its lanes' outputs freely.
template <class F>
void for_each_lane_block(const DimView& v, const F& f) {
  if (v.numel() == 0) return;
  const int64_t block = std::min<int64_t>(v.inner, 256);
  const int64_t per_outer = (v.inner + block - 1) / block;
  const int64_t work = std::max<int64_t>(v.n * block, 1);
  parallel_for(v.outer * per_outer, std::max<int64_t>(1, 32768 / work), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / per_outer, j0 = (t % per_outer) * block;
      f(o, j0, std::min(block, v.inner - j0));
    }
  });
}

/// NaN-aware ordering used by sort, topk, kthvalue and median: NaN is larger than everything
/// (and equal to itself).
template <class C> inline bool is_nan_value(C x) {
  if constexpr (std::is_floating_point_v<C>) return x != x;
  else return false;
}
template <class C> inline bool less_nan_last(C a, C b) {
  return !is_nan_value(a) && (is_nan_value(b) || a < b);
}

}  // namespace ember::flex

// flex kernels: reductions that track where the winner sits — max/min along a dim
// ((values, indices)) and argmax/argmin (along a dim, or over the flattened tensor).
// Like torch: the first occurrence wins ties, and NaN beats every number (the first NaN wins).
#include <vector>

#include "ember/backends/flex/dim_loops.h"
#include "ember/backends/flex/reduce_kernels.h"
#include "ember/kl/scalar.h"

namespace ember::flex {
namespace {

// x replaces the best so far: NaN over a number, else strictly better (so the first tie stays).
template <bool kMax, class C> inline bool better(C x, C best) {
  const bool nan_over = is_nan_value(x) && !is_nan_value(best);
  if constexpr (kMax) return nan_over || x > best;
  else return nan_over || x < best;
}

// The winner of a contiguous run: its value found with independent lanes (which vectorise),
// then the first element equal to it (or the first NaN) — the first occurrence, like torch.
template <class T, bool kMax>
void run_winner(const T* p, int64_t len, compute_t<T>& best, int64_t& at) {
  using C = compute_t<T>;
  constexpr int L = 16;
  C lanes[L];
  for (int j = 0; j < L; ++j) lanes[j] = C(p[0]);
  // kl::maximum/minimum (NaN-propagating, branch-free) is the form compilers vectorise.
  auto take = [](C m, C x) { return kMax ? kl::maximum(m, x) : kl::minimum(m, x); };
  int64_t i = 0;
  for (; i + L <= len; i += L)
    for (int j = 0; j < L; ++j) lanes[j] = take(lanes[j], C(p[i + j]));
  for (; i < len; ++i) lanes[0] = take(lanes[0], C(p[i]));
  C m = lanes[0];
  for (int j = 1; j < L; ++j) m = take(m, lanes[j]);
  int64_t k = 0;
  if (is_nan_value(m)) {
    while (!is_nan_value(C(p[k]))) ++k;
  } else {
    while (!(C(p[k]) == m)) ++k;
  }
  best = m;
  at = k;
}

template <class T, bool kMax>
void index_reduce(const DimView& v, T* vals, int64_t* idx) {
  using C = compute_t<T>;
  const T* xp = static_cast<const T*>(v.x.raw_data());
  const int64_t n = v.n, inner = v.inner;
  auto emit = [&](int64_t out, const T* src, int64_t at) {
    idx[out] = at;
    if (vals) vals[out] = src[at * inner];  // the element itself: keeps -0.0 and NaN bits
  };
  if (inner == 1) {
    constexpr int64_t kChunk = 16384;
    if (v.outer < num_threads() && n >= 4 * kChunk) {
      // Few long rows: chunks on every thread, then merged in order (earlier chunks win ties).
      const int64_t nchunks = (n + kChunk - 1) / kChunk;
      struct Winner {
        C value;
        int64_t at;
      };
      std::vector<Winner> w(static_cast<size_t>(nchunks));
      for (int64_t o = 0; o < v.outer; ++o) {
        const T* row = xp + o * n;
        parallel_for(nchunks, 1, [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k) {
            Winner& wk = w[size_t(k)];
            const int64_t len = std::min(kChunk, n - k * kChunk);
            run_winner<T, kMax>(row + k * kChunk, len, wk.value, wk.at);
            wk.at += k * kChunk;
          }
        });
        Winner best = w[0];
        for (const Winner& wk : w)
          if (better<kMax>(wk.value, best.value)) best = wk;
        emit(o, row, best.at);
      }
      return;
    }
    parallel_for(v.outer, std::max<int64_t>(1, 32768 / n), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        C best;
        int64_t at;
        run_winner<T, kMax>(xp + o * n, n, best, at);
        emit(o, xp + o * n, at);
      }
    });
    return;
  }
  // Lanes strided in memory: sweep the dim outside, a block of neighbouring lanes inside.
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
        if (better<kMax>(x, best[j])) {
          best[j] = x;
          at[j] = r;
        }
      }
    }
    for (int64_t j = 0; j < len; ++j) emit(o * inner + j0 + j, base + j, at[j]);
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

// flex kernel: interpolate. Each output axis gets precomputed taps (source indices and weights:
// 1 for nearest, 2 for linear, 4 for cubic) following torch's CPU index maths, including its
// float rounding, so results match bit for bit where torch's do; then every [H, W] plane is a
// small separable weighted sum, in parallel over planes. Nearest copies raw elements, so it
// serves every dtype.
#include <cmath>
#include <cstring>
#include <optional>

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/interpolate_taps.h"

namespace ember::flex {
namespace {

using ops::Taps;
using ops::make_taps;

struct Geometry {
  int64_t planes, h, w, oh, ow;
  std::optional<double> sh, sw;
};

template <class F>
void for_each_plane(const Geometry& g, const F& f) {
  parallel_for(g.planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.oh * g.ow)),
               [&](int64_t b, int64_t e) {
                 for (int64_t p = b; p < e; ++p) f(p);
               });
}

// Raw element copy for nearest: U is an unsigned type of the element's size.
template <class U>
void nearest(const Tensor& x, const Tensor& out, const Geometry& g, const Taps<float>& th,
             const Taps<float>& tw) {
  const U* xp = static_cast<const U*>(x.raw_data());
  U* yp = static_cast<U*>(out.raw_data());
  for_each_plane(g, [&](int64_t p) {
    const U* src = xp + p * g.h * g.w;
    U* dst = yp + p * g.oh * g.ow;
    for (int64_t i = 0; i < g.oh; ++i) {
      const U* row = src + th.idx[size_t(i)] * g.w;
      for (int64_t j = 0; j < g.ow; ++j) dst[i * g.ow + j] = row[tw.idx[size_t(j)]];
    }
  });
}

// Separable weighted sums, as torch evaluates them: first along W for every input row (into
// float scratch), then along H as weighted sums of whole rows, which are contiguous and vectorise.
template <class T, int KH, int KW>
void separable_planes(const T* xp, T* yp, const Geometry& g, const Taps<compute_t<T>>& th,
                      const Taps<compute_t<T>>& tw) {
  using C = compute_t<T>;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.oh * g.ow));
  parallel_for(g.planes, grain, [&](int64_t pb, int64_t pe) {
    std::vector<C> tmp(static_cast<size_t>(g.h * g.ow));
    for (int64_t p = pb; p < pe; ++p) {
      const T* src = xp + p * g.h * g.w;
      T* dst = yp + p * g.oh * g.ow;
      for (int64_t r = 0; r < g.h; ++r) {
        const T* row = src + r * g.w;
        C* t = tmp.data() + r * g.ow;
        for (int64_t j = 0; j < g.ow; ++j) {
          const int64_t* ix = tw.idx.data() + j * KW;
          const C* wt = tw.wt.data() + j * KW;
          C acc = C(row[ix[0]]) * wt[0];
          for (int q = 1; q < KW; ++q) acc += C(row[ix[q]]) * wt[q];
          t[j] = acc;
        }
      }
      for (int64_t i = 0; i < g.oh; ++i) {
        T* out = dst + i * g.ow;
        const C* rows[KH];
        C wt[KH];
        for (int q = 0; q < KH; ++q) {
          rows[q] = tmp.data() + th.idx[size_t(i * KH + q)] * g.ow;
          wt[q] = th.wt[size_t(i * KH + q)];
        }
        if constexpr (KH == 1) {
          for (int64_t j = 0; j < g.ow; ++j) out[j] = T(rows[0][j]);
        } else {
          for (int64_t j = 0; j < g.ow; ++j) {
            C acc = rows[0][j] * wt[0];
            for (int q = 1; q < KH; ++q) acc += rows[q][j] * wt[q];
            out[j] = T(acc);
          }
        }
      }
    }
  });
}

template <class T>
void interpolate_planes(const Tensor& x, const Tensor& out, const Geometry& g,
                        ops::InterpMode mode, bool align) {
  using C = compute_t<T>;
  const T* xp = static_cast<const T*>(x.raw_data());
  T* yp = static_cast<T*>(out.raw_data());
  const Taps<C> tw = make_taps<C>(mode, g.w, g.ow, align, g.sw);
  if (mode == ops::InterpMode::Linear) {  // a 1-d input: one row per plane, the identity along H
    separable_planes<T, 1, 2>(xp, yp, g, Taps<C>{1, {0}, {C(1)}}, tw);
    return;
  }
  const Taps<C> th = make_taps<C>(mode, g.h, g.oh, align, g.sh);
  if (mode == ops::InterpMode::Bicubic) separable_planes<T, 4, 4>(xp, yp, g, th, tw);
  else separable_planes<T, 2, 2>(xp, yp, g, th, tw);
}

TensorList k_interpolate(const OpCall& c) {
  Tensor out = new_output(c);
  const Tensor x = c.inputs[0].contiguous();
  if (out.numel() == 0) return {out};
  const Attrs& a = c.attrs;
  const bool two_d = x.dim() == 4;
  Geometry g;
  g.w = x.size(-1), g.ow = out.size(-1);
  g.h = two_d ? x.size(-2) : 1, g.oh = two_d ? out.size(-2) : 1;
  g.planes = x.numel() / (g.h * g.w);
  if (a.b[0]) {  // scale factors reach the index maths, like torch
    const double f_last = a.f[size_t(a.i[0] == 1 ? 0 : (two_d ? 1 : 0))];
    g.sw = f_last;
    if (two_d) g.sh = a.f[0];
  }
  const bool align = a.b[1];
  const auto mode = ops::InterpMode(a.mode);
  if (mode == ops::InterpMode::Nearest) {
    const Taps<float> th = two_d ? make_taps<float>(mode, g.h, g.oh, false, g.sh)
                                 : Taps<float>{1, {0}, {1.f}};
    const Taps<float> tw = make_taps<float>(mode, g.w, g.ow, false, g.sw);
    switch (x.itemsize()) {
      case 1: nearest<uint8_t>(x, out, g, th, tw); break;
      case 2: nearest<uint16_t>(x, out, g, th, tw); break;
      case 4: nearest<uint32_t>(x, out, g, th, tw); break;
      default: nearest<uint64_t>(x, out, g, th, tw); break;
    }
    return {out};
  }
  EMBER_DISPATCH_FLOAT(x.dtype(), "interpolate", interpolate_planes<T>(x, out, g, mode, align));
  return {out};
}

}  // namespace

void register_flex_interpolate(BackendImpl& b) {
  b.set_kernel(OpId::interpolate, k_interpolate, kAllDTypes);
}

}  // namespace ember::flex

#pragma once
// roi_align's sampling geometry (private), shared by the flex kernel and the decomposition so the
// two cannot disagree: torchvision's roi_align_kernel maths in the compute type C (float for
// f32/f16/bf16, double for f64), one roi at a time.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/error.h"

namespace ember::vision::detail {

struct RoiGeometry {
  int64_t height = 0, width = 0, pooled_h = 1, pooled_w = 1, sampling_ratio = -1;
  double spatial_scale = 1.0;
  bool aligned = false;
};

/// Throws for roi `k` (5 values: batch index, x1, y1, x2, y2) unless its values are finite, its
/// batch index is one of the `n` images, and its samples stay within bounds (a huge roi with an
/// adaptive sampling ratio, or a huge ratio, would ask for billions of taps). Call it for every
/// roi before computing taps.
inline void check_roi(const RoiGeometry& g, const double* r, int64_t k, int64_t n) {
  const std::string which = "roi " + std::to_string(k);
  for (int i = 0; i < 5; ++i)
    if (!std::isfinite(r[i]))
      ember::detail::throw_value("roi_align", which + " has a non-finite value");
  if (r[0] < 0 || r[0] >= double(n))
    ember::detail::throw_index("roi_align",
                               which + " has batch index " + std::to_string(int64_t(r[0])) +
                                   ", out of range for " + std::to_string(n) + " images");
  double rw = (r[3] - r[1]) * g.spatial_scale, rh = (r[4] - r[2]) * g.spatial_scale;
  if (!g.aligned) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
  const double gh =
      g.sampling_ratio > 0 ? double(g.sampling_ratio) : std::ceil(rh / double(g.pooled_h));
  const double gw =
      g.sampling_ratio > 0 ? double(g.sampling_ratio) : std::ceil(rw / double(g.pooled_w));
  const double samples = std::max(gh, 0.0) * std::max(gw, 0.0) * double(g.pooled_h * g.pooled_w);
  if (!(samples <= double(int64_t(1) << 26)))
    ember::detail::throw_value("roi_align",
                               which + " needs " + std::to_string(samples) +
                                   " bilinear samples (at most 2^26): a smaller roi or "
                                   "sampling_ratio");
}

/// One roi's taps: for each output cell (row-major over pooled_h x pooled_w), `grid` samples of
/// four (flat pixel index, weight) taps each; a sample outside the image has zero weights.
template <class C>
struct RoiTaps {
  int64_t grid = 0;          // samples per output cell (grid_h * grid_w)
  C count = 1;               // the mean's divisor: max(grid, 1)
  std::vector<int64_t> pos;  // [cells * grid * 4]
  std::vector<C> w;          // [cells * grid * 4]
};

/// The taps of the roi with corners (x1, y1, x2, y2), given in input coordinates before
/// spatial_scale.
template <class C>
RoiTaps<C> roi_taps(const RoiGeometry& g, C x1, C y1, C x2, C y2) {
  const C off = g.aligned ? C(0.5) : C(0);
  const C scale = C(g.spatial_scale);
  const C sw = x1 * scale - off, sh = y1 * scale - off;
  C rw = x2 * scale - off - sw, rh = y2 * scale - off - sh;
  if (!g.aligned) rw = std::max(rw, C(1)), rh = std::max(rh, C(1));
  const C bin_h = rh / C(g.pooled_h), bin_w = rw / C(g.pooled_w);
  const int64_t gh =
      g.sampling_ratio > 0 ? g.sampling_ratio : int64_t(std::ceil(rh / C(g.pooled_h)));
  const int64_t gw =
      g.sampling_ratio > 0 ? g.sampling_ratio : int64_t(std::ceil(rw / C(g.pooled_w)));
  RoiTaps<C> t;
  t.grid = std::max<int64_t>(gh, 0) * std::max<int64_t>(gw, 0);
  t.count = C(std::max<int64_t>(t.grid, 1));
  const int64_t cells = g.pooled_h * g.pooled_w;
  t.pos.assign(size_t(cells * t.grid * 4), 0);
  t.w.assign(size_t(cells * t.grid * 4), C(0));
  const C H = C(g.height), W = C(g.width);
  size_t at = 0;
  for (int64_t ph = 0; ph < g.pooled_h; ++ph)
    for (int64_t pw = 0; pw < g.pooled_w; ++pw)
      for (int64_t iy = 0; iy < gh; ++iy) {
        const C yy = sh + C(ph) * bin_h + C(C(iy) + C(0.5)) * bin_h / C(gh);
        for (int64_t ix = 0; ix < gw; ++ix, at += 4) {
          C y = yy;
          C x = sw + C(pw) * bin_w + C(C(ix) + C(0.5)) * bin_w / C(gw);
          if (y < C(-1) || y > H || x < C(-1) || x > W) continue;  // zero weights
          if (y <= 0) y = 0;
          if (x <= 0) x = 0;
          int64_t yl = int64_t(y), xl = int64_t(x), yh, xh;
          if (yl >= g.height - 1)
            yh = yl = g.height - 1, y = C(yl);
          else
            yh = yl + 1;
          if (xl >= g.width - 1)
            xh = xl = g.width - 1, x = C(xl);
          else
            xh = xl + 1;
          const C ly = y - C(yl), lx = x - C(xl), hy = C(1) - ly, hx = C(1) - lx;
          t.pos[at] = yl * g.width + xl, t.pos[at + 1] = yl * g.width + xh;
          t.pos[at + 2] = yh * g.width + xl, t.pos[at + 3] = yh * g.width + xh;
          t.w[at] = hy * hx, t.w[at + 1] = hy * lx, t.w[at + 2] = ly * hx, t.w[at + 3] = ly * lx;
        }
      }
  return t;
}

}  // namespace ember::vision::detail

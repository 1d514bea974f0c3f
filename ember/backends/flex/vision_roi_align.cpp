// flex kernel: roi_align, torchvision's CPU algorithm: each roi's sample taps are computed once
// (ember/vision/detail/roi_align_taps.h) and reused for every channel; rois run in parallel.
#include <string>

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/vision/detail/roi_align_taps.h"

namespace ember::flex {
namespace {

template <class T>
void roi_align_run(const Tensor& x, const Tensor& rois, const Tensor& out, const Attrs& a) {
  using C = compute_t<T>;
  const vision::detail::RoiGeometry g{x.size(2), x.size(3), a.ints[0], a.ints[1],
                                      a.i[0],    a.f[0],    a.b[0]};
  const int64_t N = x.size(0), Cn = x.size(1), K = rois.size(0), plane = g.height * g.width;
  const int64_t cells = g.pooled_h * g.pooled_w;
  const T* xp = static_cast<const T*>(x.raw_data());
  const T* rp = static_cast<const T*>(rois.raw_data());
  T* op = static_cast<T*>(out.raw_data());
  for (int64_t k = 0; k < K; ++k) {
    double r[5];
    for (int i = 0; i < 5; ++i) r[i] = double(C(rp[5 * k + i]));
    vision::detail::check_roi(g, r, k, N);
  }
  const int64_t work = std::max<int64_t>(1, Cn * cells * 16);
  parallel_for(K, std::max<int64_t>(1, 65536 / work), [&](int64_t kb, int64_t ke) {
    for (int64_t k = kb; k < ke; ++k) {
      const T* r = rp + 5 * k;
      const auto t = vision::detail::roi_taps<C>(g, C(r[1]), C(r[2]), C(r[3]), C(r[4]));
      const T* img = xp + int64_t(C(r[0])) * Cn * plane;
      for (int64_t ch = 0; ch < Cn; ++ch) {
        const T* p = img + ch * plane;
        T* o = op + (k * Cn + ch) * cells;
        for (int64_t cell = 0; cell < cells; ++cell) {
          C v = 0;
          const int64_t* pos = t.pos.data() + cell * t.grid * 4;
          const C* w = t.w.data() + cell * t.grid * 4;
          for (int64_t s = 0; s < t.grid; ++s, pos += 4, w += 4)
            v += w[0] * C(p[pos[0]]) + w[1] * C(p[pos[1]]) + w[2] * C(p[pos[2]]) +
                 w[3] * C(p[pos[3]]);
          o[cell] = T(v / t.count);
        }
      }
    }
  });
}

TensorList k_roi_align(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  const Tensor x = c.inputs[0].contiguous(), rois = c.inputs[1].contiguous();
  EMBER_DISPATCH_FLOAT(x.dtype(), "roi_align", roi_align_run<T>(x, rois, out, c.attrs));
  return {out};
}

}  // namespace

void register_flex_roi_align(BackendImpl& b) {
  b.set_kernel(OpId::roi_align, k_roi_align, kFloatDTypes);
}

}  // namespace ember::flex

// flex kernels: erode and dilate. Each image plane is copied once into a padded plane (the border
// mode fills the margins), then every output row is the running min (erode) or max (dilate) of
// the padded rows the element's nonzero offsets select: a contiguous inner loop the compiler
// vectorises. A full rectangle is separable: a horizontal pass over the element's width, then a
// vertical one over its height.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/vision/detail/morphology_border.h"

namespace ember::flex {
namespace {

using vision::detail::border_index;
using vision::detail::MorphBorder;

template <bool Erode, class C>
inline C pick(C a, C b) {
  if constexpr (Erode) return b < a ? b : a;
  else return a < b ? b : a;
}

struct MorphGeom {
  int64_t h, w, kh, kw, ay, ax;
  MorphBorder border;
  std::vector<int64_t> offs;  // active element offsets as (i, j) pairs
  bool rect;
};

// The type a plane is padded and compared in: T's compute type; bool as bytes.
template <class T>
using morph_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;

// The identity of min (erode) or max (dilate) over T's values.
template <bool Erode, class T>
morph_t<T> identity() {
  using C = morph_t<T>;
  if constexpr (std::is_same_v<T, bool>) return Erode ? 1 : 0;
  else if constexpr (std::numeric_limits<C>::has_infinity)
    return Erode ? std::numeric_limits<C>::infinity() : -std::numeric_limits<C>::infinity();
  else return Erode ? std::numeric_limits<C>::max() : std::numeric_limits<C>::lowest();
}

template <bool Erode, class T>
void morph_planes(const Tensor& x, const Tensor& out, const MorphGeom& g, morph_t<T> fill) {
  using C = morph_t<T>;
  const int64_t H = g.h, W = g.w, PH = H + g.kh - 1, PW = W + g.kw - 1;
  const int64_t planes = (H * W) != 0 ? x.numel() / (H * W) : 0;
  const T* xp = static_cast<const T*>(x.raw_data());
  T* op = static_cast<T*>(out.raw_data());
  std::vector<int64_t> rows(static_cast<size_t>(PH)), cols(static_cast<size_t>(PW));
  for (int64_t i = 0; i < PH; ++i) rows[size_t(i)] = border_index(i - g.ay, H, g.border);
  for (int64_t j = 0; j < PW; ++j) cols[size_t(j)] = border_index(j - g.ax, W, g.border);
  std::vector<C> pad(static_cast<size_t>(PH * PW)), tmp(g.rect ? static_cast<size_t>(PH * W) : 0);
  const C ident = identity<Erode, T>();
  for (int64_t p = 0; p < planes; ++p) {
    const T* src = xp + p * H * W;
    T* dst = op + p * H * W;
    parallel_for(PH, std::max<int64_t>(1, 16384 / std::max<int64_t>(PW, 1)), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        C* prow = pad.data() + i * PW;
        const int64_t r = rows[size_t(i)];
        for (int64_t j = 0; j < PW; ++j) {
          const int64_t c = cols[size_t(j)];
          prow[j] = r < 0 || c < 0 ? fill : C(src[r * W + c]);
        }
      }
    });
    if (g.rect) {  // separable: width pass into tmp [PH, W], then height pass
      parallel_for(PH, std::max<int64_t>(1, 16384 / std::max<int64_t>(W * g.kw, 1)), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const C* prow = pad.data() + i * PW;
          C* t = tmp.data() + i * W;
          for (int64_t x0 = 0; x0 < W; ++x0) t[x0] = prow[x0];
          for (int64_t j = 1; j < g.kw; ++j)
            for (int64_t x0 = 0; x0 < W; ++x0) t[x0] = pick<Erode>(t[x0], prow[x0 + j]);
        }
      });
    }
    parallel_for(H, std::max<int64_t>(1, 16384 / std::max<int64_t>(W * int64_t(g.offs.size() / 2), 1)),
                 [&](int64_t b, int64_t e) {
      std::vector<C> acc(static_cast<size_t>(W));
      for (int64_t y = b; y < e; ++y) {
        std::fill(acc.begin(), acc.end(), ident);
        if (g.rect) {
          for (int64_t i = 0; i < g.kh; ++i) {
            const C* t = tmp.data() + (y + i) * W;
            for (int64_t x0 = 0; x0 < W; ++x0) acc[size_t(x0)] = pick<Erode>(acc[size_t(x0)], t[x0]);
          }
        } else {
          for (size_t k = 0; k < g.offs.size(); k += 2) {
            const C* prow = pad.data() + (y + g.offs[k]) * PW + g.offs[k + 1];
            for (int64_t x0 = 0; x0 < W; ++x0) acc[size_t(x0)] = pick<Erode>(acc[size_t(x0)], prow[x0]);
          }
        }
        for (int64_t x0 = 0; x0 < W; ++x0) dst[y * W + x0] = T(compute_t<T>(acc[size_t(x0)]));
      }
    });
  }
}

template <bool Erode>
TensorList k_morph(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  const Tensor x = c.inputs[0].contiguous();
  const Tensor k = c.inputs[1].to(DType::Bool).contiguous();
  const Attrs& a = c.attrs;
  MorphGeom g{x.size(-2), x.size(-1), k.size(0), k.size(1), a.ints[0], a.ints[1],
              MorphBorder(a.mode), {}, true};
  const bool* kp = k.data_ptr<bool>();
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      if (kp[i * g.kw + j]) g.offs.insert(g.offs.end(), {i, j});
      else g.rect = false;
    }
  EMBER_DISPATCH_ALL(x.dtype(), Erode ? "erode" : "dilate", {
    using C = morph_t<T>;
    C fill = identity<Erode, T>();
    if (a.b[0]) fill = C(a.s[0].to<compute_t<T>>());
    if (g.offs.empty()) {  // an empty element: every pixel is the identity
      const T v = T(compute_t<T>(identity<Erode, T>()));
      T* o = static_cast<T*>(out.raw_data());
      std::fill(o, o + out.numel(), v);
    } else {
      morph_planes<Erode, T>(x, out, g, fill);
    }
  });
  return {out};
}

}  // namespace

void register_flex_morphology(BackendImpl& b) {
  b.set_kernel(OpId::erode, k_morph<true>, kAllDTypes);
  b.set_kernel(OpId::dilate, k_morph<false>, kAllDTypes);
}

}  // namespace ember::flex

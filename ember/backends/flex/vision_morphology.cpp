// flex kernels: erode and dilate. Each image plane is copied once into a padded plane (the border
// mode fills the margins). The element's rows are cut into runs of consecutive nonzero columns;
// for each distinct run length L, a padded row's running min (erode) or max (dilate) over L
// pixels comes from log2(L) passes of pairwise min/max (the window doubles each pass), and an
// output row is then the min/max over the element's runs of those rows: about log2(width) +
// height contiguous passes per row for a rectangle, cross or ellipse, each a loop the compiler
// vectorises. Rows are done in bands so the run buffers stay small.
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

// The type a plane is padded and compared in: T's compute type; bool as bytes.
template <class T>
using morph_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, compute_t<T>>;

// The identity of min (erode) or max (dilate) over T's values.
template <bool Erode, class T>
morph_t<T> identity() {
  using C = morph_t<T>;
  if constexpr (std::is_same_v<T, bool>)
    return Erode ? 1 : 0;
  else if constexpr (std::numeric_limits<C>::has_infinity)
    return Erode ? std::numeric_limits<C>::infinity() : -std::numeric_limits<C>::infinity();
  else
    return Erode ? std::numeric_limits<C>::max() : std::numeric_limits<C>::lowest();
}

// min (erode) or max (dilate) of two values; NaN compares false either way, as the loops expect.
template <bool Erode, class C>
inline C pick(C u, C v) {
  if constexpr (Erode)
    return v < u ? v : u;
  else
    return u < v ? v : u;
}

// dst[x] = pick(a[x], b[x]) for x < n; dst shares no byte with a or b.
template <bool Erode, class C>
inline void pick_row(C* __restrict dst, const C* __restrict a, const C* __restrict b, int64_t n) {
  for (int64_t x = 0; x < n; ++x) dst[x] = pick<Erode>(a[x], b[x]);
}

// acc[x] = pick(acc[x], b[x]) for x < n; acc shares no byte with b.
template <bool Erode, class C>
inline void pick_into(C* __restrict acc, const C* __restrict b, int64_t n) {
  for (int64_t x = 0; x < n; ++x) acc[x] = pick<Erode>(acc[x], b[x]);
}

struct Run {
  int64_t i, j, slot;  // element row, first column, index of its length in `lens`
};

struct MorphGeom {
  int64_t h, w, kh, kw, ay, ax;
  MorphBorder border;
  std::vector<Run> runs;
  std::vector<int64_t> lens;  // distinct run lengths
};

// out[x] = pick over p[x .. x + len) for x < n, with two scratch rows of n + len - 1 values.
template <bool Erode, class C>
void window(const C* p, int64_t len, int64_t n, C* out, C* s0, C* s1) {
  if (len == 1) {
    std::copy(p, p + n, out);
    return;
  }
  // cur holds the windows of width w at every start up to m - w.
  const int64_t m = n + len - 1;
  const C* cur = p;
  int64_t w = 1;
  while (2 * w <= len) {
    C* next = cur == s0 ? s1 : s0;
    pick_row<Erode>(next, cur, cur + w, m - 2 * w + 1);
    cur = next;
    w *= 2;
  }
  if (w == len)
    std::copy(cur, cur + n, out);
  else
    pick_row<Erode>(out, cur, cur + (len - w), n);
}

template <bool Erode, class T>
void morph_planes(const Tensor& x, const Tensor& out, const MorphGeom& g, morph_t<T> fill) {
  using C = morph_t<T>;
  const int64_t H = g.h, W = g.w, PH = H + g.kh - 1, PW = W + g.kw - 1;
  const int64_t planes = (H * W) != 0 ? x.numel() / (H * W) : 0;
  const int64_t S = int64_t(g.lens.size());
  const T* xp = static_cast<const T*>(x.raw_data());
  T* op = static_cast<T*>(out.raw_data());
  std::vector<int64_t> rows(static_cast<size_t>(PH)), cols(static_cast<size_t>(PW));
  for (int64_t i = 0; i < PH; ++i) rows[size_t(i)] = border_index(i - g.ay, H, g.border);
  for (int64_t j = 0; j < PW; ++j) cols[size_t(j)] = border_index(j - g.ax, W, g.border);
  const C ident = identity<Erode, T>();
  // Output rows per band: the band's padded rows' run windows (S per row, PW wide) stay < 32 MB.
  const int64_t per_row = std::max<int64_t>(1, S * PW * int64_t(sizeof(C)));
  const int64_t band =
      std::max<int64_t>(1, std::min<int64_t>(H, (int64_t(32) << 20) / per_row - g.kh));
  std::vector<C> pad(static_cast<size_t>(PH * PW));
  std::vector<C> win(static_cast<size_t>(std::min<int64_t>(PH, band + g.kh - 1) * S * PW));
  for (int64_t p = 0; p < planes; ++p) {
    const T* src = xp + p * H * W;
    T* dst = op + p * H * W;
    parallel_for(PH, std::max<int64_t>(1, 16384 / std::max<int64_t>(PW, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t i = b; i < e; ++i) {
                     C* prow = pad.data() + i * PW;
                     const int64_t r = rows[size_t(i)];
                     if (r < 0) {
                       std::fill(prow, prow + PW, fill);
                       continue;
                     }
                     const T* s = src + r * W;
                     for (int64_t j = 0; j < g.ax; ++j)
                       prow[j] = cols[size_t(j)] < 0 ? fill : C(s[cols[size_t(j)]]);
                     C* mid = prow + g.ax;
                     for (int64_t j = 0; j < W; ++j) mid[j] = C(s[j]);
                     for (int64_t j = g.ax + W; j < PW; ++j)
                       prow[j] = cols[size_t(j)] < 0 ? fill : C(s[cols[size_t(j)]]);
                   }
                 });
    for (int64_t y0 = 0; y0 < H; y0 += band) {
      const int64_t y1 = std::min(H, y0 + band), r0 = y0, r1 = y1 + g.kh - 1;
      // Run windows of padded rows [r0, r1): win[((r - r0) * S + slot) * PW + x].
      parallel_for(r1 - r0, std::max<int64_t>(1, 4096 / std::max<int64_t>(PW * S, 1)),
                   [&](int64_t b, int64_t e) {
                     std::vector<C> s0(static_cast<size_t>(PW)), s1(static_cast<size_t>(PW));
                     for (int64_t r = r0 + b; r < r0 + e; ++r)
                       for (int64_t s = 0; s < S; ++s) {
                         const int64_t len = g.lens[size_t(s)];
                         window<Erode>(pad.data() + r * PW, len, PW - len + 1,
                                       win.data() + ((r - r0) * S + s) * PW, s0.data(), s1.data());
                       }
                   });
      parallel_for(y1 - y0,
                   std::max<int64_t>(1, 16384 / std::max<int64_t>(W * int64_t(g.runs.size()), 1)),
                   [&](int64_t b, int64_t e) {
                     std::vector<C> acc(static_cast<size_t>(W));
                     for (int64_t y = y0 + b; y < y0 + e; ++y) {
                       std::fill(acc.begin(), acc.end(), ident);
                       for (const Run& run : g.runs) {
                         const C* wr = win.data() + ((y - r0 + run.i) * S + run.slot) * PW + run.j;
                         pick_into<Erode>(acc.data(), wr, W);
                       }
                       T* o = dst + y * W;
                       for (int64_t x0 = 0; x0 < W; ++x0) o[x0] = T(compute_t<T>(acc[size_t(x0)]));
                     }
                   });
    }
  }
}

template <bool Erode>
TensorList k_morph(const OpCall& c) {
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  const Tensor x = c.inputs[0].contiguous();
  const Tensor k = c.inputs[1].to(DType::Bool).contiguous();
  const Attrs& a = c.attrs;
  MorphGeom g{x.size(-2), x.size(-1),          k.size(0), k.size(1), a.ints[0],
              a.ints[1],  MorphBorder(a.mode), {},        {}};
  const bool* kp = k.data_ptr<bool>();
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw;) {
      if (!kp[i * g.kw + j]) {
        ++j;
        continue;
      }
      int64_t e = j;
      while (e < g.kw && kp[i * g.kw + e]) ++e;
      auto it = std::find(g.lens.begin(), g.lens.end(), e - j);
      if (it == g.lens.end()) it = g.lens.insert(g.lens.end(), e - j);
      g.runs.push_back({i, j, int64_t(it - g.lens.begin())});
      j = e;
    }
  EMBER_DISPATCH_ALL(x.dtype(), Erode ? "erode" : "dilate", {
    using C = morph_t<T>;
    C fill = identity<Erode, T>();
    if (a.b[0]) fill = C(a.s[0].to<compute_t<T>>());
    if (g.runs.empty()) {  // an empty element: every pixel is the identity
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

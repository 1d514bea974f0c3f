// flex kernels: max/avg pooling (1-d runs as 2-d with H = 1) and adaptive pooling. Every op works
// plane by plane ([N*C] planes of H x W, contiguous), in parallel over planes; window bounds and
// the NaN rule follow torch's CPU kernels exactly.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/nn_common.h"

namespace ember::flex {
namespace {

struct Planes {
  Tensor x;  // contiguous input
  int64_t count, h, w, oh, ow;
};

Planes planes_of(const OpCall& c, int nd) {
  Planes p;
  p.x = c.inputs[0].contiguous();
  const Shape& os = c.meta.m[0].shape;
  p.w = p.x.size(-1);
  p.h = nd == 2 ? p.x.size(-2) : 1;
  p.ow = os.back();
  p.oh = nd == 2 ? os[os.size() - 2] : 1;
  p.count = p.x.numel() / (p.h * p.w);
  return p;
}
int spatial_dims(OpId op) {
  switch (op) {
    case OpId::max_pool1d: case OpId::avg_pool1d: case OpId::adaptive_avg_pool1d: return 1;
    default: return 2;
  }
}

template <class F>
void for_each_plane(const Planes& p, const F& f) {
  const int64_t work = std::max<int64_t>(1, p.oh * p.ow);
  parallel_for(p.count, std::max<int64_t>(1, 16384 / work), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

// The max of a window [h0, h1) x [w0, w1) (steps dh, dw) and the position torch reports for it:
// the first maximum, or the last NaN when there is one (NaN wins and sticks). Max and position
// are separate passes with short dependency chains, not one compare-and-branch per element.
template <class T>
inline void window_max(const T* x, int64_t width, int64_t h0, int64_t h1, int64_t dh, int64_t w0,
                       int64_t w1, int64_t dw, compute_t<T>& best, int64_t& at) {
  using C = compute_t<T>;
  C m = -std::numeric_limits<C>::infinity();
  bool nan = false;
  for (int64_t ih = h0; ih < h1; ih += dh)
    for (int64_t iw = w0; iw < w1; iw += dw) {
      const C v = C(x[ih * width + iw]);
      m = v > m ? v : m;
      nan |= v != v;
    }
  at = h0 * width + w0;
  if (nan) {
    for (int64_t ih = h0; ih < h1; ih += dh)
      for (int64_t iw = w0; iw < w1; iw += dw) {
        const C v = C(x[ih * width + iw]);
        at = v != v ? ih * width + iw : at;
      }
    best = std::numeric_limits<C>::quiet_NaN();
    return;
  }
  // Backwards, so the last hit is the first maximum.
  const int64_t hl = dh == 1 ? h1 - 1 : h0 + (h1 - 1 - h0) / dh * dh;
  const int64_t wl = dw == 1 ? w1 - 1 : w0 + (w1 - 1 - w0) / dw * dw;
  for (int64_t ih = hl; ih >= h0; ih -= dh)
    for (int64_t iw = wl; iw >= w0; iw -= dw) at = C(x[ih * width + iw]) == m ? ih * width + iw : at;
  best = m;
}

// `a` when `c`, else `b`, as bit arithmetic: no branch for the compiler to bring back.
template <class C>
inline C pick(bool c, C a, C b) {
  using U = std::conditional_t<sizeof(C) == 8, uint64_t, uint32_t>;
  const U m = U(0) - U(c);
  return std::bit_cast<C>(U((std::bit_cast<U>(a) & m) | (std::bit_cast<U>(b) & ~m)));
}

// Max pooling of one plane when no position is asked for (max_pool without return_indices, as
// ONNX's MaxPool and most models call it), row by row: the window's taps outermost and the
// output columns innermost, so the columns' compares are independent (they pipeline and
// vectorize) rather than one chain of dependent selects per window, and no position pass runs.
// The taps of output ow are ow * sw - pw + j * dw inside [0, w), as in the windowed loop; a NaN,
// once in, stays (nothing compares above it). ResNet-18's 3x3 pool: 7x faster than windowed.
template <class T>
void max_pool_values(const T* x, int64_t h, int64_t w, int64_t oh_n, int64_t ow_n,
                     const ops::PoolParams& k, T* __restrict y) {
  using C = compute_t<T>;
  thread_local std::vector<C> row;
  row.resize(size_t(ow_n));
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    std::fill(row.begin(), row.end(), -std::numeric_limits<C>::infinity());
    int64_t h0 = oh * k.sh - k.ph;
    const int64_t h1 = std::min(h0 + (k.kh - 1) * k.dh + 1, h);
    while (h0 < 0) h0 += k.dh;
    for (int64_t ih = h0; ih < h1; ih += k.dh) {
      const T* xr = x + ih * w;
      for (int64_t j = 0; j < k.kw; ++j) {
        const int64_t off = j * k.dw - k.pw;  // the tap's column is ow * sw + off
        const int64_t lo = off >= 0 ? 0 : (-off + k.sw - 1) / k.sw;
        const int64_t hi = w - 1 - off < 0 ? 0 : std::min(ow_n, (w - 1 - off) / k.sw + 1);
        C* __restrict m = row.data();
        for (int64_t ow = lo; ow < hi; ++ow) {
          const C v = C(xr[ow * k.sw + off]);
          m[ow] = pick((v > m[ow]) | (v != v), v, m[ow]);
        }
      }
    }
    for (int64_t ow = 0; ow < ow_n; ++ow) y[oh * ow_n + ow] = T(row[size_t(ow)]);
  }
}

// The common 2x2, stride 2, unpadded window: four compares in torch's order (a value wins when it
// is larger or NaN, so the first maximum and the last NaN are reported). Written as selects, not
// branches: after a ReLU which of the four wins is a coin toss (ties at zero included), and a
// mispredicted branch per compare made this loop several times slower than its memory traffic.
// Rows are short (14 or 7 outputs in a small CNN), so most of it is the scalar remainder.
template <class T>
__attribute__((noinline)) void max_pool_2x2(const T* x, int64_t w, int64_t oh_n, int64_t ow_n,
                                            T* __restrict y, int64_t* __restrict idx) {
  using C = compute_t<T>;
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    const T* r0 = x + 2 * oh * w;
    const T* r1 = r0 + w;
    T* yr = y + oh * ow_n;
    const int64_t base = 2 * oh * w;
    for (int64_t ow = 0; ow < ow_n; ++ow) {
      const int64_t i0 = base + 2 * ow;
      C m = C(r0[2 * ow]);
      int64_t at = i0;
      const C b = C(r0[2 * ow + 1]), c = C(r1[2 * ow]), d = C(r1[2 * ow + 1]);
      const bool tb = (b > m) | (b != b);
      m = pick(tb, b, m);
      at = pick(tb, i0 + 1, at);
      const bool tc = (c > m) | (c != c);
      m = pick(tc, c, m);
      at = pick(tc, i0 + w, at);
      const bool td = (d > m) | (d != d);
      m = pick(td, d, m);
      at = pick(td, i0 + w + 1, at);
      yr[ow] = T(m);
      if (idx) idx[oh * ow_n + ow] = at;
    }
  }
}

TensorList k_max_pool(const OpCall& c) {
  const int nd = spatial_dims(c.op);
  const ops::PoolParams k = ops::pool_params(op_name(c.op), c.attrs, nd, true);
  Planes p = planes_of(c, nd);
  Tensor out = new_output(c);
  const bool with_idx = c.attrs.b[1];
  Tensor idx = with_idx ? new_output(c, 1) : Tensor();
  int64_t* ip = with_idx ? static_cast<int64_t*>(idx.raw_data()) : nullptr;
  const bool unit_dilation = k.dh == 1 && k.dw == 1;  // lets the common case use constant steps
  EMBER_DISPATCH_FLOAT(p.x.dtype(), op_name(c.op), {
    using C = compute_t<T>;
    const T* xp = static_cast<const T*>(p.x.raw_data());
    T* yp = static_cast<T*>(out.raw_data());
    const bool two_by_two = nd == 2 && k.kh == 2 && k.kw == 2 && k.sh == 2 && k.sw == 2 &&
                            k.ph == 0 && k.pw == 0 && unit_dilation && 2 * p.oh <= p.h &&
                            2 * p.ow <= p.w;
    for_each_plane(p, [&](int64_t pl) {
      const T* x = xp + pl * p.h * p.w;
      if (two_by_two) {
        const int64_t o = pl * p.oh * p.ow;
        max_pool_2x2(x, p.w, p.oh, p.ow, yp + o, ip ? ip + o : nullptr);
        return;
      }
      if (!ip) {
        max_pool_values(x, p.h, p.w, p.oh, p.ow, k, yp + pl * p.oh * p.ow);
        return;
      }
      for (int64_t oh = 0; oh < p.oh; ++oh) {
        int64_t h0 = oh * k.sh - k.ph;
        const int64_t h1 = std::min(h0 + (k.kh - 1) * k.dh + 1, p.h);
        while (h0 < 0) h0 += k.dh;
        for (int64_t ow = 0; ow < p.ow; ++ow) {
          int64_t w0 = ow * k.sw - k.pw;
          const int64_t w1 = std::min(w0 + (k.kw - 1) * k.dw + 1, p.w);
          while (w0 < 0) w0 += k.dw;
          C best;
          int64_t at;
          if (unit_dilation) window_max(x, p.w, h0, h1, 1, w0, w1, 1, best, at);
          else window_max(x, p.w, h0, h1, k.dh, w0, w1, k.dw, best, at);
          const int64_t o = (pl * p.oh + oh) * p.ow + ow;
          yp[o] = T(best);
          if (ip) ip[o] = at;
        }
      }
    });
  });
  if (with_idx) return {out, idx};
  return {out};
}

TensorList k_avg_pool(const OpCall& c) {
  const int nd = spatial_dims(c.op);
  const ops::PoolParams k = ops::pool_params(op_name(c.op), c.attrs, nd, false);
  const bool include_pad = c.attrs.b[1];
  Planes p = planes_of(c, nd);
  Tensor out = new_output(c);
  EMBER_DISPATCH_FLOAT(p.x.dtype(), op_name(c.op), {
    using C = compute_t<T>;
    const T* xp = static_cast<const T*>(p.x.raw_data());
    T* yp = static_cast<T*>(out.raw_data());
    for_each_plane(p, [&](int64_t pl) {
      const T* x = xp + pl * p.h * p.w;
      for (int64_t oh = 0; oh < p.oh; ++oh) {
        for (int64_t ow = 0; ow < p.ow; ++ow) {
          // The window may hang into the padding (counted when include_pad) but not beyond it.
          int64_t h0 = oh * k.sh - k.ph, w0 = ow * k.sw - k.pw;
          int64_t h1 = std::min(h0 + k.kh, p.h + k.ph), w1 = std::min(w0 + k.kw, p.w + k.pw);
          const int64_t pool_size = (h1 - h0) * (w1 - w0);
          h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
          h1 = std::min(h1, p.h), w1 = std::min(w1, p.w);
          C acc = 0;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) acc += C(x[ih * p.w + iw]);
          const int64_t n = include_pad ? pool_size : (h1 - h0) * (w1 - w0);
          yp[(pl * p.oh + oh) * p.ow + ow] = T(h0 < h1 && w0 < w1 ? acc / C(n) : C(0));
        }
      }
    });
  });
  return {out};
}

// Adaptive pooling: output cell (oh, ow) covers [start, end) windows that tile the input.
template <bool kMax>
TensorList adaptive_pool(const OpCall& c) {
  const int nd = spatial_dims(c.op);
  Planes p = planes_of(c, nd);
  Tensor out = new_output(c);
  Tensor idx = kMax ? new_output(c, 1) : Tensor();
  if (out.numel() == 0) return kMax ? TensorList{out, idx} : TensorList{out};
  EMBER_DISPATCH_FLOAT(p.x.dtype(), op_name(c.op), {
    using C = compute_t<T>;
    const T* xp = static_cast<const T*>(p.x.raw_data());
    T* yp = static_cast<T*>(out.raw_data());
    int64_t* ip = kMax ? static_cast<int64_t*>(idx.raw_data()) : nullptr;
    for_each_plane(p, [&](int64_t pl) {
      const T* x = xp + pl * p.h * p.w;
      for (int64_t oh = 0; oh < p.oh; ++oh) {
        const int64_t h0 = ops::adaptive_start(oh, p.h, p.oh),
                      h1 = ops::adaptive_end(oh, p.h, p.oh);
        for (int64_t ow = 0; ow < p.ow; ++ow) {
          const int64_t w0 = ops::adaptive_start(ow, p.w, p.ow);
          const int64_t w1 = ops::adaptive_end(ow, p.w, p.ow);
          const int64_t o = (pl * p.oh + oh) * p.ow + ow;
          if constexpr (kMax) {
            C best;
            int64_t at;
            window_max(x, p.w, h0, h1, 1, w0, w1, 1, best, at);
            yp[o] = T(best);
            ip[o] = at;
          } else {
            C acc = 0;
            for (int64_t ih = h0; ih < h1; ++ih)
              for (int64_t iw = w0; iw < w1; ++iw) acc += C(x[ih * p.w + iw]);
            yp[o] = T(acc / C((h1 - h0) * (w1 - w0)));
          }
        }
      }
    });
  });
  if constexpr (kMax) return {out, idx};
  return {out};
}

}  // namespace

void register_flex_pool(BackendImpl& b) {
  b.set_kernel(OpId::max_pool1d, k_max_pool, kFloatDTypes);
  b.set_kernel(OpId::max_pool2d, k_max_pool, kFloatDTypes);
  b.set_kernel(OpId::avg_pool1d, k_avg_pool, kFloatDTypes);
  b.set_kernel(OpId::avg_pool2d, k_avg_pool, kFloatDTypes);
  b.set_kernel(OpId::adaptive_avg_pool1d, adaptive_pool<false>, kFloatDTypes);
  b.set_kernel(OpId::adaptive_avg_pool2d, adaptive_pool<false>, kFloatDTypes);
  b.set_kernel(OpId::adaptive_max_pool2d, adaptive_pool<true>, kFloatDTypes);
}

}  // namespace ember::flex

// flex kernels: conv1d/2d/3d and conv_transpose1d/2d as im2col / col2im around gemm(), plus the
// unfold (im2col) and fold (col2im) ops themselves. Every spatial rank runs through one 3-D
// formulation (unused dims have size 1). Work is split over (sample, group) pairs when there
// are enough of them, else each GEMM is split over the threads.
#include <cstring>

#include "ember/backends/flex/flex.h"
#include "ember/backends/flex/gemm.h"
#include "ember/backends/flex/gemm_dispatch.h"
#include "ember/backends/flex/loops.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ops/conv.h"
#include "ember/ops/layout.h"
#include "ember/ops/unary.h"

namespace ember::flex {
namespace {

using Geo = ops::ConvGeometry;

template <class T> T* ptr(const Tensor& t) {
  return static_cast<T*>(static_cast<void*>(t.impl()->data()));
}

// Sliding-block geometry in the 3-D form: an image of `img` pixels per channel, a grid of `grid`
// block positions, each block reading kernel pixels at pos * stride - pad + k * dilation.
struct Blocks {
  Geo::Dims img, grid, k, s, p, d;
  int64_t img_numel() const { return img[0] * img[1] * img[2]; }
  int64_t kk() const { return k[0] * k[1] * k[2]; }
};

// Visits rows [r0, r1) x columns [l0, l1) of the column matrix (row = (channel, kz, ky, kx),
// column = a grid position) as runs of columns that share a grid row: f(row - r0, column - l0,
// offset of the image row or -1 when it lies in the padding, first image column, run length).
template <class F>
void for_each_run(const Blocks& b, int64_t r0, int64_t r1, int64_t l0, int64_t l1, const F& f) {
  const int64_t ox0 = l0 % b.grid[2], oy0 = l0 / b.grid[2] % b.grid[1];
  const int64_t oz0 = l0 / b.grid[2] / b.grid[1];
  // The row's (channel, kz, ky, kx), stepped like an odometer instead of divided out per row.
  int64_t kx = r0 % b.k[2], ky = r0 / b.k[2] % b.k[1], kz = r0 / b.k[2] / b.k[1] % b.k[0];
  int64_t c = r0 / b.kk();
  for (int64_t row = r0; row < r1; ++row) {
    int64_t ox = ox0, oy = oy0, oz = oz0;
    const int64_t ix0 = kx * b.d[2] - b.p[2];
    for (int64_t l = l0; l < l1;) {
      const int64_t len = std::min(b.grid[2] - ox, l1 - l);
      const int64_t iz = oz * b.s[0] - b.p[0] + kz * b.d[0];
      const int64_t iy = oy * b.s[1] - b.p[1] + ky * b.d[1];
      const bool inside = iz >= 0 && iz < b.img[0] && iy >= 0 && iy < b.img[1];
      const int64_t base = inside ? ((c * b.img[0] + iz) * b.img[1] + iy) * b.img[2] : -1;
      f(row - r0, l - l0, base, ox * b.s[2] + ix0, len);
      l += len;
      ox = 0;
      if (++oy == b.grid[1]) oy = 0, ++oz;
    }
    if (++kx == b.k[2]) {
      kx = 0;
      if (++ky == b.k[1]) {
        ky = 0;
        if (++kz == b.k[0]) kz = 0, ++c;
      }
    }
  }
}

// n elements from src to dst. A row of a small image is a few dozen bytes: in WebAssembly a
// memcpy call costs more than the copy, so rows go in 16-byte pieces the compiler inlines.
template <class T>
inline void copy_run(T* dst, const T* src, int64_t n) {
#ifdef __EMSCRIPTEN__
  const size_t bytes = size_t(n) * sizeof(T);
  if (bytes <= 256) {
    auto* d = reinterpret_cast<unsigned char*>(dst);
    auto* s = reinterpret_cast<const unsigned char*>(src);
    size_t i = 0;
    for (; i + 16 <= bytes; i += 16) __builtin_memcpy(d + i, s + i, 16);
    for (; i < bytes; ++i) d[i] = s[i];
    return;
  }
#endif
  std::memcpy(dst, src, size_t(n) * sizeof(T));
}

// col[row - r0, l - l0] = the image pixel that block position l reads for `row` (0 in the
// padding).
template <class T>
void im2col(const T* x, const Blocks& b, int64_t r0, int64_t r1, int64_t l0, int64_t l1, T* col,
            int64_t ld) {
  const int64_t w = b.img[2], sx = b.s[2];
  auto run = [&](int64_t row, int64_t j, int64_t base, int64_t ix0, int64_t len) {
    T* o = col + row * ld + j;
    if (base < 0) {
      std::fill(o, o + len, T(0));
      return;
    }
    const T* src = x + base;
    if (sx == 1) {
      const int64_t lo = std::clamp<int64_t>(-ix0, 0, len);
      const int64_t hi = std::clamp<int64_t>(w - ix0, lo, len);
      std::fill(o, o + lo, T(0));
      copy_run(o + lo, src + ix0 + lo, hi - lo);
      std::fill(o + hi, o + len, T(0));
      return;
    }
    for (int64_t q = 0; q < len; ++q) {
      const int64_t ix = ix0 + q * sx;
      o[q] = ix >= 0 && ix < w ? src[ix] : T(0);
    }
  };
  for_each_run(b, r0, r1, l0, l1, run);
}

// The adjoint: x[pixel] += col[row, j] (padding positions are dropped).
template <class T>
void col2im(const T* col, int64_t ld, const Blocks& b, int64_t r0, int64_t r1, int64_t l0,
            int64_t l1, T* x) {
  const int64_t w = b.img[2], sx = b.s[2];
  auto run = [&](int64_t row, int64_t j, int64_t base, int64_t ix0, int64_t len) {
    if (base < 0) return;
    const T* src = col + row * ld + j;
    T* dst = x + base;
    for (int64_t q = 0; q < len; ++q) {
      const int64_t ix = ix0 + q * sx;
      if (ix >= 0 && ix < w) dst[ix] = T(compute_t<T>(dst[ix]) + compute_t<T>(src[q]));
    }
  };
  for_each_run(b, r0, r1, l0, l1, run);
}

thread_local std::vector<char> t_col;
template <class T> T* col_buffer(int64_t n) {
  if (t_col.size() < size_t(n) * sizeof(T)) t_col.resize(size_t(n) * sizeof(T));
  return reinterpret_cast<T*>(t_col.data());
}

// Column chunks of about 2 MB, so the column block stays in L2 while the GEMM packs it.
int64_t chunk_cols(int64_t rows, int64_t cols, size_t elem) {
  int64_t c = int64_t((size_t(2) << 20) / (elem * size_t(std::max<int64_t>(rows, 1))));
  c = std::max<int64_t>(64, c / 64 * 64);
  return std::min(c, cols);
}

// Runs task(t, inner) for t in [0, tasks): in parallel over tasks when there are enough of them,
// else one by one with inner = true (the task parallelises its own GEMM and copies).
template <class F>
void run_tasks(int64_t tasks, double flops_per_task, const F& task) {
  const int64_t threads = num_threads();
  if (tasks >= 2 * threads || (tasks > 1 && flops_per_task < double(1 << 20))) {
    parallel_for(tasks, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) task(t, false);
    });
  } else {
    for (int64_t t = 0; t < tasks; ++t) task(t, true);
  }
}

template <class T>
void fill_bias(T* out, const Tensor& bias, int64_t first, int64_t count, int64_t len) {
  const T* bp = ptr<T>(bias);
  for (int64_t o = 0; o < count; ++o) std::fill(out + o * len, out + (o + 1) * len, bp[first + o]);
}

Blocks forward_blocks(const Geo& g) { return {g.in, g.out, g.kernel, g.stride, g.pad, g.dilation}; }

// One sample and group's im2col matrix as a GEMM operand, packed straight from the image: no
// column buffer is written and read back.
template <class T>
struct ImplicitCols {
  const T* x;
  const Blocks* b;
  static void pack(const void* ctx, int64_t p0, int64_t kc, int64_t j0, int64_t nr, T* dst,
                   int64_t ld) {
    const auto& s = *static_cast<const ImplicitCols*>(ctx);
    im2col(s.x, *s.b, p0, p0 + kc, j0, j0 + nr, dst, ld);
  }
};

template <class T>
void conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out,
                  const Geo& g) {
  const Blocks b = forward_blocks(g);
  const int64_t G = g.groups, cg = g.c_in / G, og = g.c_out / G, kk = b.kk(), K = cg * kk;
  const int64_t L = g.out_numel(), P = g.in_numel();
  const bool direct = kk == 1 && b.s == Geo::Dims{1, 1, 1} && b.p == Geo::Dims{0, 0, 0};
  const T *xp = ptr<T>(x), *wp = ptr<T>(w);
  T* op = ptr<T>(out);
  run_tasks(g.n * G, 2.0 * double(og) * double(K) * double(L), [&](int64_t t, bool inner) {
    const int64_t n = t / G, grp = t % G;
    const T* xs = xp + (n * g.c_in + grp * cg) * P;
    T* os = op + (n * g.c_out + grp * og) * L;
    const MatRef<T> wm{wp + grp * og * K, K, 1};
    if (bias.defined()) fill_bias(os, bias, grp * og, og, L);
    if (direct) return gemm<T>(og, L, K, wm, {xs, P, 1}, os, L, bias.defined());
    if constexpr (std::is_floating_point_v<T>) {
      if (og > 1) {  // (one output channel is a matrix-vector product: gemm's own path below)
        const ImplicitCols<T> src{xs, &b};
        return gemm<T>(og, L, K, wm, PackedSource<T>{ImplicitCols<T>::pack, &src}, os, L,
                       bias.defined());
      }
    }
    const int64_t lc = chunk_cols(K, L, sizeof(T));
    T* col = col_buffer<T>(K * lc);
    for (int64_t l0 = 0; l0 < L; l0 += lc) {
      const int64_t l1 = std::min(L, l0 + lc), len = l1 - l0;
      parallel_for(cg, inner ? 1 : cg, [&](int64_t c0, int64_t c1) {
        im2col(xs, b, c0 * kk, c1 * kk, l0, l1, col + c0 * kk * len, len);
      });
      gemm<T>(og, len, K, wm, {col, len, 1}, os + l0, L, bias.defined());
    }
  });
}

template <class T>
void conv_transpose(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out,
                    const Geo& g) {
  // The adjoint of a forward conv whose image is this op's output and whose grid is its input.
  const Blocks b{g.out, g.in, g.kernel, g.stride, g.pad, g.dilation};
  const int64_t G = g.groups, cig = g.c_in / G, og = g.c_out / G, kk = b.kk(), M = og * kk;
  const int64_t L = g.in_numel(), P = g.out_numel();
  const T *xp = ptr<T>(x), *wp = ptr<T>(w);
  T* op = ptr<T>(out);
  run_tasks(g.n * G, 2.0 * double(M) * double(cig) * double(L), [&](int64_t t, bool inner) {
    const int64_t n = t / G, grp = t % G;
    const T* xs = xp + (n * g.c_in + grp * cig) * L;
    T* os = op + (n * g.c_out + grp * og) * P;
    if (bias.defined()) fill_bias(os, bias, grp * og, og, P);
    else std::fill(os, os + og * P, T(0));
    // W_g is [cig, og * kk] row-major; the column block is W_g^T @ x_g.
    const MatRef<T> wt{wp + grp * cig * M, 1, M};
    const int64_t lc = chunk_cols(M, L, sizeof(T));
    T* col = col_buffer<T>(M * lc);
    for (int64_t l0 = 0; l0 < L; l0 += lc) {
      const int64_t l1 = std::min(L, l0 + lc), len = l1 - l0;
      gemm<T>(M, len, cig, wt, {xs + l0, L, 1}, col, len, false);
      parallel_for(og, inner ? 1 : og, [&](int64_t c0, int64_t c1) {
        col2im(col + c0 * kk * len, len, b, c0 * kk, c1 * kk, l0, l1, os);
      });
    }
  });
}

TensorList k_conv(const OpCall& c) {
  if (is_half(c.inputs[0].dtype())) return via_f32(c);
  const Geo g = ops::conv_geometry(c.op, c.attrs, c.inputs);
  Tensor out = new_output(c);
  if (out.numel() == 0) return {out};
  Tensor x = contiguous(c.inputs[0]), w = contiguous(c.inputs[1]), bias = c.inputs[2];
  if (bias.defined()) bias = contiguous(bias);
  const bool transposed = c.op == OpId::conv_transpose1d || c.op == OpId::conv_transpose2d;
  dispatch_gemm(x.dtype(), op_name(c.op), [&](auto tag) {
    using T = decltype(tag);
    if (transposed) conv_transpose<T>(x, w, bias, out, g);
    else conv_forward<T>(x, w, bias, out, g);
  });
  return {out};
}

// unfold: [N, C, H, W] -> [N, C*kh*kw, L]; fold: the adjoint, summing overlapping blocks.
TensorList k_blocks(const OpCall& c) {
  const Geo g = ops::conv_geometry(c.op, c.attrs, c.inputs);
  const Blocks b = forward_blocks(g);
  Tensor out = new_output(c);
  Tensor x = contiguous(c.inputs[0]);
  const int64_t kk = b.kk(), L = g.out_numel(), P = g.in_numel(), C = g.c_in;
  const bool unfold = c.op == OpId::unfold;
  EMBER_DISPATCH_NUMERIC(x.dtype(), op_name(c.op), {
    if (!unfold && out.numel()) std::fill(ptr<T>(out), ptr<T>(out) + out.numel(), T(0));
    if (x.numel() == 0) break;
    const T* xp = ptr<T>(x);
    T* op = ptr<T>(out);
    parallel_for(g.n * C, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, kk * L)),
                 [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n = t / C, ch = t % C;
        if (unfold)
          im2col(xp + n * C * P, b, ch * kk, (ch + 1) * kk, 0, L, op + (n * C + ch) * kk * L, L);
        else col2im(xp + (n * C + ch) * kk * L, L, b, ch * kk, (ch + 1) * kk, 0, L, op + n * C * P);
      }
    });
  });
  return {out};
}

}  // namespace

void register_flex_conv(BackendImpl& b) {
  for (OpId op : {OpId::conv1d, OpId::conv2d, OpId::conv3d, OpId::conv_transpose1d,
                  OpId::conv_transpose2d})
    b.set_kernel(op, k_conv, kNumericDTypes);
  b.set_kernel(OpId::unfold, k_blocks, kNumericDTypes);
  b.set_kernel(OpId::fold, k_blocks, kNumericDTypes);
}

}  // namespace ember::flex

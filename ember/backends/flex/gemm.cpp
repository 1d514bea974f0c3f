// flex GEMM: BLIS-style blocking (KC of the depth, MC rows of A, NC columns of B, sized from the
// caches) around the register-blocked micro-kernels of gemm_kernel.h. Packed blocks are
// contiguous and padded with zeros to whole slivers, so the micro-kernel never branches on edges.
// Each thread of a product owns a block of C's columns (or, when C is narrow, of its rows) and
// packs its own operands, so one parallel region serves the whole product. Skinny shapes skip
// the packing that would not pay: a few rows of A against a row-major B read B in place, against
// a column-major B (x @ W^T) they become blocks of dot products. Integers take a plain loop.
#include "ember/backends/flex/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "ember/backends/flex/gemm_kernel.h"
#include "ember/backends/flex/gemm_transpose.h"
#include "ember/backends/flex/thread_pool.h"

// The build uses ISO C++, where GCC does not fuse a * b + c into an FMA unless told to; the dot
// and matrix-vector loops here are written as multiply-adds so that it does.
#pragma GCC optimize("fp-contract=fast")

namespace ember::flex {
namespace {

using gemm_detail::blocking;
using gemm_detail::Kernels;
using gemm_detail::kernels;
using gemm_detail::micro_for;
using gemm_detail::Tile;
using gemm_detail::transpose_into;

// Products of fewer flops run on the calling thread: below this, waking a second thread costs
// more than it saves.
constexpr double kParallelFlops = double(1 << 20);
// What packing one element costs, in multiply-adds of the micro-kernel (which does 16 or 32 a
// cycle; a packing loop moves a few elements a cycle).
constexpr double kPackCost = 8;
// A B block is read in place instead of packed when at most this many A slivers pass over it:
// packing copies all of B to serve a handful of rows.
constexpr int64_t kInPlaceSlivers = 3;
// Up to this many rows, A row-major against B column-major is taken as dot products, at depths
// where the horizontal sum that ends each dot product costs little (below, packing W^T wins).
constexpr int64_t kDotRowsMax = 32, kDotMinDepth = 256;

// Per-thread scratch that grows and is reused (pack buffers must not be allocated per call).
struct Scratch {
  void* p = nullptr;
  size_t cap = 0;
  ~Scratch() { std::free(p); }
  template <class T>
  T* get(size_t n) {
    size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    if (bytes > cap) {
      std::free(p);
      p = std::aligned_alloc(64, bytes);
      if (!p) throw std::bad_alloc();
      cap = bytes;
    }
    return static_cast<T*>(p);
  }
};
thread_local Scratch t_pack_a, t_pack_b;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Splits `len` into the fewest blocks of at most `max`, of equal size rounded up to `unit`.
int64_t balanced_block(int64_t len, int64_t max, int64_t unit) {
  return std::min(max, ceil_div(ceil_div(len, ceil_div(len, max)), unit) * unit);
}

// The A block rows [i0, i0 + mc) x depth [p0, p0 + kc), as MR-row slivers: sliver s holds
// dst[s * kc * MR + p * MR + i]; rows past mc are zeroed. Reads follow A's contiguous direction.
template <class T, int MR>
void pack_a_block(MatRef<T> a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* __restrict dst) {
  const int64_t nsl = ceil_div(mc, MR);
  if (a.rs == 1) {  // column-major A: each depth step is a contiguous run of rows
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = a.p + (p0 + p) * a.cs + i0;
      for (int64_t s = 0; s < nsl; ++s) {
        const int mr = int(std::min<int64_t>(MR, mc - s * MR));
        T* d = dst + s * kc * MR + p * MR;
        std::memcpy(d, src + s * MR, size_t(mr) * sizeof(T));
        for (int i = mr; i < MR; ++i) d[i] = T(0);
      }
    }
    return;
  }
  for (int64_t s = 0; s < nsl; ++s) {
    const int mr = int(std::min<int64_t>(MR, mc - s * MR));
    T* d = dst + s * kc * MR;
    if (a.cs == 1) {  // row-major A: rows are contiguous, the sliver interleaves them
      transpose_into(a.p + (i0 + s * MR) * a.rs + p0, a.rs, mr, kc, d, MR);
    } else {
      for (int i = 0; i < mr; ++i) {
        const T* src = a.p + (i0 + s * MR + i) * a.rs + p0 * a.cs;
        for (int64_t p = 0; p < kc; ++p) d[p * MR + i] = src[p * a.cs];
      }
    }
    for (int i = mr; i < MR; ++i)
      for (int64_t p = 0; p < kc; ++p) d[p * MR + i] = T(0);
  }
}

// A B sliver: depth [p0, p0 + kc) x columns [j0, j0 + nr) -> dst[p * NR + j], columns past nr
// zeroed.
template <class T, int NR>
void pack_b(MatRef<T> b, int64_t p0, int64_t kc, int64_t j0, int nr, T* __restrict dst) {
  if (b.cs == 1) {
    for (int64_t p = 0; p < kc; ++p) {
      T* d = dst + p * NR;
      const T* src = b.p + (p0 + p) * b.rs + j0;
      if (nr == NR) {
        std::memcpy(d, src, sizeof(T) * NR);  // a fixed size: inlined as vector moves
        continue;
      }
      std::memcpy(d, src, size_t(nr) * sizeof(T));
      for (int j = nr; j < NR; ++j) d[j] = T(0);
    }
    return;
  }
  // Column-major (transposed) B: walk each column down the depth, in chunks of depth whose
  // destination stays in L1.
  constexpr int64_t kChunk = 64;
  for (int64_t q = 0; q < kc; q += kChunk) {
    const int64_t qe = std::min(kc, q + kChunk);
    if (b.rs == 1) {
      transpose_into(b.p + j0 * b.cs + p0 + q, b.cs, nr, qe - q, dst + q * NR, NR);
    } else {
      for (int j = 0; j < nr; ++j) {
        const T* src = b.p + (j0 + j) * b.cs + p0 * b.rs;
        for (int64_t p = q; p < qe; ++p) dst[p * NR + j] = src[p * b.rs];
      }
    }
    for (int64_t p = q; p < qe; ++p)
      for (int j = nr; j < NR; ++j) dst[p * NR + j] = T(0);
  }
}

template <class T, int NR>
void pack_b(PackedSource<T> b, int64_t p0, int64_t kc, int64_t j0, int nr, T* __restrict dst) {
  b.fn(b.ctx, p0, kc, j0, nr, dst, NR);
  if (nr < NR)
    for (int64_t p = 0; p < kc; ++p)
      for (int j = nr; j < NR; ++j) dst[p * NR + j] = T(0);
}

// Whether B can be read in place: row-major, so that a sliver's rows are contiguous runs.
template <class T>
bool in_place_ok(const MatRef<T>& b) {
  return b.cs == 1;
}
template <class T>
bool in_place_ok(const PackedSource<T>&) {
  return false;
}

// C rows [i0, i1) x columns [j0, j1) on the calling thread.
template <class T, class BSrc>
void gemm_block(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t k, MatRef<T> a,
                const BSrc& b, T* c, int64_t ldc, bool accumulate, const T* bias) {
  using Tl = Tile<T>;
  constexpr int MR = Tl::MR, NR = Tl::NR;
  const Kernels<T>& kern = kernels<T>();
  const int64_t m = i1 - i0, n = j1 - j0;
  const int64_t kc_max = balanced_block(k, blocking<T>().kc, 8);
  const int64_t nc_max = balanced_block(n, blocking<T>().nc, NR);
  const int64_t mc_max = balanced_block(m, Tl::MC, MR);
  T* ap = t_pack_a.get<T>(size_t(mc_max * kc_max));
  T* bp = t_pack_b.get<T>(size_t(kc_max * nc_max));
  for (int64_t pc = 0; pc < k; pc += kc_max) {
    const int64_t kc = std::min(kc_max, k - pc);
    const bool acc = accumulate || pc > 0;
    const T* bias_pc = pc == 0 ? bias : nullptr;
    for (int64_t ic = i0; ic < i1; ic += mc_max) {
      const int64_t mc = std::min(mc_max, i1 - ic), msl = ceil_div(mc, MR);
      pack_a_block<T, MR>(a, ic, mc, pc, kc, ap);
      const bool in_place = msl <= kInPlaceSlivers && in_place_ok(b);
      for (int64_t jc = j0; jc < j1; jc += nc_max) {
        const int64_t nc = std::min(nc_max, j1 - jc), nsl = ceil_div(nc, NR);
        for (int64_t s = 0; s < nsl; ++s) {
          const int nr = int(std::min<int64_t>(NR, nc - s * NR));
          if (!in_place || nr < NR) pack_b<T, NR>(b, pc, kc, jc + s * NR, nr, bp + s * kc * NR);
        }
        for (int64_t mi = 0; mi < msl; ++mi) {
          const int mr = int(std::min<int64_t>(MR, mc - mi * MR));
          const auto micro = micro_for(kern, mr);
          T* crow = c + (ic + mi * MR) * ldc + jc;
          for (int64_t s = 0; s < nsl; ++s) {
            const int nr = int(std::min<int64_t>(NR, nc - s * NR));
            const T* bs = bp + s * kc * NR;
            int64_t ldb = NR;
            if constexpr (std::is_same_v<BSrc, MatRef<T>>) {
              if (in_place && nr == NR) {
                bs = b.p + pc * b.rs + jc + s * NR;
                ldb = b.rs;
              }
            }
            micro(kc, ap + mi * kc * MR, bs, ldb, crow + s * NR, ldc, mr, nr, acc,
                  bias_pc ? bias_pc + jc + s * NR : nullptr);
          }
        }
      }
    }
  }
}

// Splits C over the threads by whole column slivers or by row slivers, whichever gives each
// thread less to do: its share of C's multiply-adds, plus kPackCost for each element it packs.
// A column split packs B once but every thread packs all of A; a row split the reverse (x @ W
// with many rows and few columns: a column split would pack all of x in every thread).
template <class T, class BSrc>
void gemm_packed(int64_t m, int64_t n, int64_t k, MatRef<T> a, const BSrc& b, T* c, int64_t ldc,
                 bool accumulate, const T* bias) {
  constexpr int MR = Tile<T>::MR, NR = Tile<T>::NR;
  const bool parallel =
      2.0 * double(m) * double(n) * double(k) >= kParallelFlops && !in_parallel_region();
  const int64_t threads = parallel ? num_threads() : 1;
  const int64_t nsl = ceil_div(n, NR), msl = ceil_div(m, MR);
  const int64_t pc = std::min(threads, nsl), pr = std::min(threads, msl);
  const int64_t cols = std::min(n, ceil_div(nsl, pc) * NR);  // per thread, column split
  const int64_t rows = std::min(m, ceil_div(msl, pr) * MR);  // per thread, row split
  auto b_packed = [&](int64_t block_rows) {
    return !(ceil_div(block_rows, MR) <= kInPlaceSlivers && in_place_ok(b));
  };
  const double cost_c = double(m) * double(cols) + kPackCost * double(m + (b_packed(m) ? cols : 0));
  const double cost_r =
      double(rows) * double(n) + kPackCost * double(rows + (b_packed(rows) ? n : 0));
  if (threads == 1 || std::max(pc, pr) == 1)
    return gemm_block(0, m, 0, n, k, a, b, c, ldc, accumulate, bias);
  if (cost_c <= cost_r) {
    parallel_for(pc, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        gemm_block(0, m, std::min(n, nsl * t / pc * NR), std::min(n, nsl * (t + 1) / pc * NR), k, a,
                   b, c, ldc, accumulate, bias);
    });
  } else {
    parallel_for(pr, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t)
        gemm_block(std::min(m, msl * t / pr * MR), std::min(m, msl * (t + 1) / pr * MR), 0, n, k, a,
                   b, c, ldc, accumulate, bias);
    });
  }
}

template <class T>
T dot_contig(int64_t n, const T* __restrict x, const T* __restrict y) {
  using V = typename gemm_detail::VecOf<T, 64>::type;
  constexpr int L = int(64 / sizeof(T));
  V s[4] = {};
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L)
    for (int u = 0; u < 4; ++u) {
      V xv, yv;
      std::memcpy(&xv, x + i + u * L, sizeof(V));
      std::memcpy(&yv, y + i + u * L, sizeof(V));
      s[u] += xv * yv;
    }
  V t = (s[0] + s[1]) + (s[2] + s[3]);
  T r = 0;
  for (int l = 0; l < L; ++l) r += t[l];
  for (; i < n; ++i) r += x[i] * y[i];
  return r;
}

// Matrix-vector shapes that the dot blocks do not take (n == 1, or m == 1 against a row-major
// B): packing would pad the vector to a whole sliver.
template <class T>
void gemv(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
          bool accumulate, const T* bias) {
  if (n == 1) {  // c[i] = A[i, :] . b
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(k, 1));
    parallel_for(m, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        T v = dot<T>(k, a.p + i * a.rs, a.cs, b.p, b.rs);
        if (accumulate) v += c[i * ldc];
        if (bias) v += bias[0];
        c[i * ldc] = v;
      }
    });
    return;
  }
  // m == 1: c[j] = a . B[:, j]. Row-major B: accumulate rows (contiguous, vectorises).
  const int64_t grain = std::max<int64_t>(256, 32768 / std::max<int64_t>(k, 1));
  parallel_for(n, grain, [&](int64_t j0, int64_t j1) {
    T* __restrict out = c + j0;
    const int64_t len = j1 - j0;
    if (!accumulate) std::fill(out, out + len, T(0));
    if (bias)
      for (int64_t j = 0; j < len; ++j) out[j] += bias[j0 + j];
    if (b.cs == 1) {
      for (int64_t p = 0; p < k; ++p) {
        const T s = a.p[p * a.cs];
        const T* __restrict row = b.p + p * b.rs + j0;
        for (int64_t j = 0; j < len; ++j) out[j] += s * row[j];
      }
      return;
    }
    for (int64_t j = 0; j < len; ++j) out[j] += dot<T>(k, a.p, a.cs, b.p + (j0 + j) * b.cs, b.rs);
  });
}

// Few rows of A against a column-major B (x @ W^T of a linear layer at a small batch): packing
// would copy all of W to serve a handful of rows, and cost as much as the product. Instead the
// outputs are dot products of contiguous vectors, computed in blocks of rows x columns whose W
// columns stay in L1 while every row block of A passes over them: W is read from memory once.
template <class T>
void gemm_dot(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
              bool accumulate, const T* bias) {
  const Kernels<T>& kern = kernels<T>();
  const int64_t cols = kern.dot_cols, nb = ceil_div(n, cols);
  const int64_t row_blocks = ceil_div(m, kern.dot_rows);  // of equal size, for m = 16 at 3 rows
  const double flops = 2.0 * double(m) * double(n) * double(k);
  const int64_t grain =
      flops >= kParallelFlops ? std::max<int64_t>(1, (int64_t(1) << 17) / (2 * m * k * cols)) : nb;
  parallel_for(nb, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t jb = b0; jb < b1; ++jb) {
      const int64_t j0 = jb * cols;
      const int nj = int(std::min(cols, n - j0));
      for (int64_t r = 0; r < row_blocks; ++r) {
        const int64_t r0 = m * r / row_blocks, r1 = m * (r + 1) / row_blocks;
        kern.dot[r1 - r0 - 1](k, a.p + r0 * a.rs, a.rs, b.p + j0 * b.cs, b.cs, c + r0 * ldc + j0,
                              ldc, nj, accumulate, bias ? bias + j0 : nullptr);
      }
    }
  });
}

template <class T>
void gemm_float(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
                bool accumulate, const T* bias) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      T* row = c + i * ldc;
      if (!accumulate) std::fill(row, row + n, T(0));
      if (bias)
        for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
    }
    return;
  }
  if (n == 1) return gemv(m, n, k, a, b, c, ldc, accumulate, bias);
  if (m <= kDotRowsMax && a.cs == 1 && b.rs == 1 && k >= kDotMinDepth)
    return gemm_dot(m, n, k, a, b, c, ldc, accumulate, bias);
  if (m == 1) return gemv(m, n, k, a, b, c, ldc, accumulate, bias);
  gemm_packed(m, n, k, a, b, c, ldc, accumulate, bias);
}

// Integers: exact, wrapping (unsigned arithmetic is defined on overflow; the final narrowing
// conversion is modular in C++20).
template <class T>
void gemm_int(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
              bool accumulate, const T* bias) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * k));
  parallel_for(m, grain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        uint64_t s = accumulate ? uint64_t(int64_t(c[i * ldc + j])) : 0;
        if (bias) s += uint64_t(int64_t(bias[j]));
        for (int64_t p = 0; p < k; ++p)
          s += uint64_t(int64_t(a.p[i * a.rs + p * a.cs])) *
               uint64_t(int64_t(b.p[p * b.rs + j * b.cs]));
        c[i * ldc + j] = T(s);
      }
  });
}

}  // namespace

template <class T>
T dot(int64_t n, const T* x, int64_t incx, const T* y, int64_t incy) {
  if constexpr (std::is_floating_point_v<T>) {
    if (incx == 1 && incy == 1) return dot_contig(n, x, y);
    T r = 0;
    for (int64_t i = 0; i < n; ++i) r += x[i * incx] * y[i * incy];
    return r;
  } else {
    uint64_t r = 0;
    for (int64_t i = 0; i < n; ++i)
      r += uint64_t(int64_t(x[i * incx])) * uint64_t(int64_t(y[i * incy]));
    return T(r);
  }
}

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
          bool accumulate, const T* bias) {
  if constexpr (std::is_floating_point_v<T>)
    gemm_float(m, n, k, a, b, c, ldc, accumulate, bias);
  else
    gemm_int(m, n, k, a, b, c, ldc, accumulate, bias);
}

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, MatRef<T> a, PackedSource<T> b, T* c, int64_t ldc,
          bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0)
    return gemm_float(m, n, k, a, MatRef<T>{}, c, ldc, accumulate, static_cast<const T*>(nullptr));
  gemm_packed(m, n, k, a, b, c, ldc, accumulate, static_cast<const T*>(nullptr));
}
template void gemm<float>(int64_t, int64_t, int64_t, MatRef<float>, PackedSource<float>, float*,
                          int64_t, bool);
template void gemm<double>(int64_t, int64_t, int64_t, MatRef<double>, PackedSource<double>, double*,
                           int64_t, bool);

#define EMBER_GEMM_INST(T)                                                                  \
  template void gemm<T>(int64_t, int64_t, int64_t, MatRef<T>, MatRef<T>, T*, int64_t, bool, \
                        const T*);                                                          \
  template T dot<T>(int64_t, const T*, int64_t, const T*, int64_t);
EMBER_GEMM_INST(float)
EMBER_GEMM_INST(double) EMBER_GEMM_INST(uint8_t) EMBER_GEMM_INST(int8_t) EMBER_GEMM_INST(int16_t)
    EMBER_GEMM_INST(int32_t) EMBER_GEMM_INST(int64_t)
#undef EMBER_GEMM_INST

}  // namespace ember::flex

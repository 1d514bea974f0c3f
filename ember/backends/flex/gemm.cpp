// flex GEMM: BLIS-style blocking (KC of the depth, MC rows of A, NC columns of B) around the
// register-blocked MR x NR micro-kernel of gemm_kernel.h. Packed blocks are contiguous and padded
// with zeros to whole slivers, so the micro-kernel never branches on edges. Matrix-vector shapes
// and integers take simpler loops.
// gemm_kernel.h comes first: its fp-contract pragma also lets the dot loops below use FMAs.
#include "ember/backends/flex/gemm_kernel.h"

#include "ember/backends/flex/gemm.h"
#include "ember/backends/flex/gemm_transpose.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "ember/backends/flex/thread_pool.h"

namespace ember::flex {
namespace {

using gemm_detail::kLanes;
using gemm_detail::micro;
using gemm_detail::Tile;
using gemm_detail::transpose_into;
using gemm_detail::Vec;

// Per-thread scratch that grows and is reused (pack buffers must not be allocated per call).
struct Scratch {
  void* p = nullptr;
  size_t cap = 0;
  ~Scratch() { std::free(p); }
  template <class T> T* get(size_t n) {
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

// The A block rows [i0, i0 + mc) x depth [p0, p0 + kc), as MR-row slivers: sliver s holds
// dst[s * kc * MR + p * MR + i]; rows past mc are zeroed. Reads follow A's contiguous direction.
template <class T, int MR>
void pack_a_block(MatRef<T> a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* __restrict dst,
                  bool parallel) {
  const int64_t nsl = (mc + MR - 1) / MR;
  if (a.rs == 1) {  // column-major A: each depth step is a contiguous run of rows
    parallel_for(kc, parallel ? 16 : kc, [&](int64_t q0, int64_t q1) {
      for (int64_t p = q0; p < q1; ++p) {
        const T* src = a.p + (p0 + p) * a.cs + i0;
        for (int64_t s = 0; s < nsl; ++s) {
          const int mr = int(std::min<int64_t>(MR, mc - s * MR));
          T* d = dst + s * kc * MR + p * MR;
          std::memcpy(d, src + s * MR, size_t(mr) * sizeof(T));
          for (int i = mr; i < MR; ++i) d[i] = T(0);
        }
      }
    });
    return;
  }
  parallel_for(nsl, parallel ? 4 : nsl, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
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
  });
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

template <class T, class BSrc>
void gemm_packed(int64_t m, int64_t n, int64_t k, MatRef<T> a, const BSrc& b, T* c, int64_t ldc,
                 bool accumulate) {
  using Tl = Tile<T>;
  constexpr int MR = Tl::MR, NR = Tl::NR;
  const int64_t threads = num_threads();
  const bool parallel = 2 * m * n * k >= (int64_t(1) << 21);
  const int64_t mc_max = std::min(Tl::MC, (m + MR - 1) / MR * MR);
  const int64_t kc_max = std::min(Tl::KC, k);
  T* ap = t_pack_a.get<T>(size_t(mc_max * kc_max));
  T* bp = t_pack_b.get<T>(size_t(kc_max * std::min(Tl::NC, (n + NR - 1) / NR * NR)));
  for (int64_t pc = 0; pc < k; pc += Tl::KC) {
    const int64_t kc = std::min(Tl::KC, k - pc);
    const bool acc = accumulate || pc > 0;
    for (int64_t ic = 0; ic < m; ic += Tl::MC) {
      const int64_t mc = std::min(Tl::MC, m - ic), msl = (mc + MR - 1) / MR;
      pack_a_block<T, MR>(a, ic, mc, pc, kc, ap, parallel);
      for (int64_t jc = 0; jc < n; jc += Tl::NC) {
        const int64_t nc = std::min(Tl::NC, n - jc), nsl = (nc + NR - 1) / NR;
        parallel_for(nsl, parallel ? 2 : nsl, [&](int64_t s0, int64_t s1) {
          for (int64_t s = s0; s < s1; ++s)
            pack_b<T, NR>(b, pc, kc, jc + s * NR, int(std::min<int64_t>(NR, nc - s * NR)),
                          bp + s * kc * NR);
        });
        // Few rows: also split the columns so every thread gets work.
        const int64_t parts =
            msl >= 4 * threads ? 1 : std::min(nsl, (4 * threads + msl - 1) / msl);
        parallel_for(msl * parts, parallel ? 1 : msl * parts, [&](int64_t t0, int64_t t1) {
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t mi = t / parts, part = t % parts;
            const int mr = int(std::min<int64_t>(MR, mc - mi * MR));
            T* crow = c + (ic + mi * MR) * ldc + jc;
            for (int64_t s = nsl * part / parts, e = nsl * (part + 1) / parts; s < e; ++s)
              micro(kc, ap + mi * kc * MR, bp + s * kc * NR, crow + s * NR, ldc, mr,
                    int(std::min<int64_t>(NR, nc - s * NR)), acc);
          }
        });
      }
    }
  }
}

template <class T>
T dot_contig(int64_t n, const T* __restrict x, const T* __restrict y) {
  using V = Vec<T>;
  constexpr int L = kLanes<T>;
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

// Matrix-vector shapes (m == 1 or n == 1): packing would pad the vector to a whole sliver.
template <class T>
void gemv(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
          bool accumulate) {
  if (n == 1) {  // c[i] = A[i, :] . b
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(k, 1));
    parallel_for(m, grain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        T v = dot<T>(k, a.p + i * a.rs, a.cs, b.p, b.rs);
        c[i * ldc] = accumulate ? c[i * ldc] + v : v;
      }
    });
    return;
  }
  // m == 1: c[j] = a . B[:, j]. Row-major B: accumulate rows (contiguous, vectorises).
  const int64_t grain = std::max<int64_t>(256, 32768 / std::max<int64_t>(k, 1));
  parallel_for(n, grain, [&](int64_t j0, int64_t j1) {
    if (b.cs == 1) {
      T* __restrict out = c + j0;
      if (!accumulate) std::fill(out, out + (j1 - j0), T(0));
      for (int64_t p = 0; p < k; ++p) {
        const T s = a.p[p * a.cs];
        const T* __restrict row = b.p + p * b.rs + j0;
        for (int64_t j = 0; j < j1 - j0; ++j) out[j] += s * row[j];
      }
      return;
    }
    for (int64_t j = j0; j < j1; ++j) {
      T v = dot<T>(k, a.p, a.cs, b.p + j * b.cs, b.rs);
      c[j] = accumulate ? c[j] + v : v;
    }
  });
}

// Few rows of A against a column-major B (x @ W^T of a linear layer at a small batch): packing
// would copy all of W to serve a handful of rows, and cost as much as the product. Instead each
// output is a dot product of two contiguous vectors, computed in 4 x 4 blocks whose W rows stay
// in L1 while every row block of A passes over them; W is read from memory once.
constexpr int64_t kDotRowsMax = 32;

// The sum of a vector's lanes by halving (a serial sum of 16 lanes is 16 dependent adds).
template <class T>
T hsum(const Vec<T>& v) {
  using H = typename gemm_detail::VecOf<T, 32>::type;
  using Q = typename gemm_detail::VecOf<T, 16>::type;
  H lo, hi;
  std::memcpy(&lo, &v, sizeof(H));
  std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof(H), sizeof(H));
  const H h = lo + hi;
  Q ql, qh;
  std::memcpy(&ql, &h, sizeof(Q));
  std::memcpy(&qh, reinterpret_cast<const char*>(&h) + sizeof(Q), sizeof(Q));
  const Q q = ql + qh;
  T r = 0;
  for (int l = 0; l < int(16 / sizeof(T)); ++l) r += q[l];
  return r;
}

template <class T>
void gemm_dot_block(int64_t k, const T* const* ar, const T* const* br, T (&out)[4][4]) {
  using V = Vec<T>;
  constexpr int L = kLanes<T>;
  const T *a0 = ar[0], *a1 = ar[1], *a2 = ar[2], *a3 = ar[3];
  const T *b0 = br[0], *b1 = br[1], *b2 = br[2], *b3 = br[3];
  V s[4][4] = {};
  int64_t p = 0;
  for (; p + L <= k; p += L) {
    V av[4], bv[4];
    std::memcpy(&av[0], a0 + p, sizeof(V));
    std::memcpy(&av[1], a1 + p, sizeof(V));
    std::memcpy(&av[2], a2 + p, sizeof(V));
    std::memcpy(&av[3], a3 + p, sizeof(V));
    std::memcpy(&bv[0], b0 + p, sizeof(V));
    std::memcpy(&bv[1], b1 + p, sizeof(V));
    std::memcpy(&bv[2], b2 + p, sizeof(V));
    std::memcpy(&bv[3], b3 + p, sizeof(V));
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) s[i][j] += av[i] * bv[j];
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      T r = hsum<T>(s[i][j]);
      for (int64_t q = p; q < k; ++q) r += ar[i][q] * br[j][q];
      out[i][j] = r;
    }
}

template <class T>
void gemm_dot(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
              bool accumulate) {
  const int64_t nb = (n + 3) / 4;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, m * k));
  parallel_for(nb, grain, [&](int64_t j0b, int64_t j1b) {
    for (int64_t jb = j0b; jb < j1b; ++jb) {
      const int64_t j0 = jb * 4, nj = std::min<int64_t>(4, n - j0);
      const T* br[4];
      for (int j = 0; j < 4; ++j) br[j] = b.p + (j0 + std::min<int64_t>(j, nj - 1)) * b.cs;
      for (int64_t i0 = 0; i0 < m; i0 += 4) {
        const int64_t ni = std::min<int64_t>(4, m - i0);
        const T* ar[4];  // edge blocks repeat their last row/column and drop the copies
        for (int i = 0; i < 4; ++i) ar[i] = a.p + (i0 + std::min<int64_t>(i, ni - 1)) * a.rs;
        T out[4][4];
        gemm_dot_block(k, ar, br, out);
        for (int64_t i = 0; i < ni; ++i)
          for (int64_t j = 0; j < nj; ++j) {
            T& dst = c[(i0 + i) * ldc + j0 + j];
            dst = accumulate ? dst + out[i][j] : out[i][j];
          }
      }
    }
  });
}

template <class T>
void gemm_float(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
                bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  if (m == 1 || n == 1) return gemv(m, n, k, a, b, c, ldc, accumulate);
  if (m <= kDotRowsMax && a.cs == 1 && b.rs == 1)
    return gemm_dot(m, n, k, a, b, c, ldc, accumulate);
  gemm_packed(m, n, k, a, b, c, ldc, accumulate);
}

// Integers: exact, wrapping (unsigned arithmetic is defined on overflow; the final narrowing
// conversion is modular in C++20).
template <class T>
void gemm_int(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
              bool accumulate) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * k));
  parallel_for(m, grain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        uint64_t s = accumulate ? uint64_t(int64_t(c[i * ldc + j])) : 0;
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
          bool accumulate) {
  if constexpr (std::is_floating_point_v<T>) gemm_float(m, n, k, a, b, c, ldc, accumulate);
  else gemm_int(m, n, k, a, b, c, ldc, accumulate);
}

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, MatRef<T> a, PackedSource<T> b, T* c, int64_t ldc,
          bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) return gemm_float(m, n, k, a, MatRef<T>{}, c, ldc, accumulate);
  gemm_packed(m, n, k, a, b, c, ldc, accumulate);
}
template void gemm<float>(int64_t, int64_t, int64_t, MatRef<float>, PackedSource<float>, float*,
                          int64_t, bool);
template void gemm<double>(int64_t, int64_t, int64_t, MatRef<double>, PackedSource<double>,
                           double*, int64_t, bool);

#define EMBER_GEMM_INST(T)                                                                  \
  template void gemm<T>(int64_t, int64_t, int64_t, MatRef<T>, MatRef<T>, T*, int64_t, bool); \
  template T dot<T>(int64_t, const T*, int64_t, const T*, int64_t);
EMBER_GEMM_INST(float) EMBER_GEMM_INST(double) EMBER_GEMM_INST(uint8_t) EMBER_GEMM_INST(int8_t)
EMBER_GEMM_INST(int16_t) EMBER_GEMM_INST(int32_t) EMBER_GEMM_INST(int64_t)
#undef EMBER_GEMM_INST

}  // namespace ember::flex

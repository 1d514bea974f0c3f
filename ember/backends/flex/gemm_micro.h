#pragma once
// The flex GEMM's kernel bodies (private to gemm_kernel.cpp), plain C++ on GCC vector types of VB
// bytes. gemm_kernel.cpp instantiates them once per instruction set inside functions carrying a
// target attribute, so everything here is always_inline: a call out of such a function would
// lose the wider vectors (and change the ABI of vector arguments).
//
// The build uses ISO C++, where GCC does not fuse a * b + c into an FMA unless told to; the
// kernels are written as multiply-adds precisely so that it does.
#pragma GCC optimize("fp-contract=fast")
// The helpers below take and return wide vectors; being always_inline they never cross an ABI
// boundary, so GCC's note that passing them changes the ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

#include <cstring>

#include "ember/backends/flex/gemm_kernel.h"

#define EMBER_GEMM_INLINE __attribute__((always_inline)) inline

namespace ember::flex::gemm_detail {

template <class T, int VB> using V = typename VecOf<T, VB>::type;

template <class T, int VB>
EMBER_GEMM_INLINE V<T, VB> load(const T* p) {
  V<T, VB> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <class T, int VB>
EMBER_GEMM_INLINE void store(T* p, const V<T, VB>& v) {
  std::memcpy(p, &v, sizeof(v));
}

// The sum of a vector's lanes by halving (a serial sum of 16 lanes is 16 dependent adds).
template <class T, int VB>
EMBER_GEMM_INLINE T hsum(const V<T, VB>& v) {
  if constexpr (VB == 16) {
    T r = v[0];
    for (int l = 1; l < int(16 / sizeof(T)); ++l) r += v[l];
    return r;
  } else {
    V<T, VB / 2> lo, hi;
    std::memcpy(&lo, &v, VB / 2);
    std::memcpy(&hi, reinterpret_cast<const char*>(&v) + VB / 2, VB / 2);
    return hsum<T, VB / 2>(lo + hi);
  }
}

// One register block of the micro-kernel: R rows of the A sliver (from row i0 on, packed with
// row stride MR) times NVP vectors of B columns; dst (row stride ldd) (+)= the product (+ bias).
template <class T, int VB, int R, int NVP>
EMBER_GEMM_INLINE void micro_pass(int64_t kc, const T* __restrict a, const T* __restrict b,
                                  int64_t ldb, T* __restrict dst, int64_t ldd, bool acc,
                                  const T* __restrict bias) {
  constexpr int MR = Tile<T>::MR, L = VB / int(sizeof(T));
  using Vt = V<T, VB>;
  Vt r[R][NVP];
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < NVP; ++v) r[i][v] = Vt{};
  for (int64_t p = 0; p < kc; ++p) {
    Vt bv[NVP];
    for (int v = 0; v < NVP; ++v) bv[v] = load<T, VB>(b + p * ldb + v * L);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const T s = a[p * MR + i];
      for (int v = 0; v < NVP; ++v) r[i][v] += s * bv[v];
    }
  }
  for (int i = 0; i < R; ++i)
    for (int v = 0; v < NVP; ++v) {
      T* d = dst + i * ldd + v * L;
      Vt out = r[i][v];
      if (acc) out += load<T, VB>(d);
      if (bias) out += load<T, VB>(bias + v * L);
      store<T, VB>(d, out);
    }
}

// Row passes of RB rows (the last one shorter) over the tile's ROWS rows, each swept over the
// tile's NR columns in passes of NVP vectors.
template <class T, int VB, int NVP, int RB, int ROWS, int I0 = 0>
EMBER_GEMM_INLINE void row_passes(int64_t kc, const T* a, const T* b, int64_t ldb, T* dst,
                                  int64_t ldd, bool acc, const T* bias) {
  constexpr int R = RB < ROWS - I0 ? RB : ROWS - I0, W = NVP * VB / int(sizeof(T));
  for (int j0 = 0; j0 < Tile<T>::NR; j0 += W)
    micro_pass<T, VB, R, NVP>(kc, a + I0, b + j0, ldb, dst + I0 * ldd + j0, ldd, acc,
                              bias ? bias + j0 : nullptr);
  if constexpr (I0 + R < ROWS)
    row_passes<T, VB, NVP, RB, ROWS, I0 + R>(kc, a, b, ldb, dst, ldd, acc, bias);
}

// C[mr x nr] (+)= A sliver * B sliver (+ bias), computing the first ROWS rows of the sliver only:
// a partial last sliver (m = 16 is one full sliver and 4 rows) would otherwise cost a whole tile
// of padding. A partial tile goes through a local buffer.
template <class T, int VB, int NVP, int RB, int ROWS>
EMBER_GEMM_INLINE void micro_body(int64_t kc, const T* a, const T* b, int64_t ldb, T* c,
                                  int64_t ldc, int mr, int nr, bool acc, const T* bias) {
  constexpr int NR = Tile<T>::NR;
  if (mr == ROWS && nr == NR)
    return row_passes<T, VB, NVP, RB, ROWS>(kc, a, b, ldb, c, ldc, acc, bias);
  alignas(64) T tile[ROWS * NR];
  row_passes<T, VB, NVP, RB, ROWS>(kc, a, b, ldb, tile, NR, false, nullptr);
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) {
      T v = tile[i * NR + j];
      if (acc) v += c[i * ldc + j];
      if (bias) v += bias[j];
      c[i * ldc + j] = v;
    }
}

// C[R x nj] (+)= dot products of R rows of A with `C` columns of B (both contiguous along the
// depth; columns past nj repeat the last one and are dropped): the skinny product x @ W^T of a
// linear layer at a small batch, where packing W would cost as much as the product.
template <class T, int VB, int R, int C>
EMBER_GEMM_INLINE void dot_body(int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                                T* c, int64_t ldc, int nj, bool acc, const T* bias) {
  constexpr int L = VB / int(sizeof(T));
  using Vt = V<T, VB>;
  const T* bj[C];
  for (int j = 0; j < C; ++j) bj[j] = b + (j < nj ? j : nj - 1) * ldb;
  Vt s[R][C];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) s[i][j] = Vt{};
  int64_t p = 0;
  for (; p + L <= k; p += L) {
    Vt av[R];
    for (int i = 0; i < R; ++i) av[i] = load<T, VB>(a + i * lda + p);
#pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      const Vt bv = load<T, VB>(bj[j] + p);
      for (int i = 0; i < R; ++i) s[i][j] += av[i] * bv;
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < nj; ++j) {
      T r = hsum<T, VB>(s[i][j]);
      for (int64_t q = p; q < k; ++q) r += a[i * lda + q] * bj[j][q];
      T& d = c[i * ldc + j];
      if (acc) r += d;
      if (bias) r += bias[j];
      d = r;
    }
}

}  // namespace ember::flex::gemm_detail

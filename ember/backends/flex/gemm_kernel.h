#pragma once
// The flex GEMM's register-blocked micro-kernel (private to gemm.cpp): vector types, the tile and
// block sizes, and the ISA choice.
//
// The micro-kernel is plain C++ on GCC vector types. Built with -march=native it is compiled once
// for the host's widest vectors; a portable x86-64 build carries AVX-512, AVX2+FMA and SSE2
// variants and picks one on first use (a function pointer set from __builtin_cpu_supports).
// target_clones would be the idiom, but with GCC 12 / glibc 2.36 its load-time resolver picked
// the baseline clone on AVX-512 hosts, silently costing ~50x in throughput.
//
// The build uses ISO C++, where GCC does not fuse a * b + c into an FMA unless told to; the
// micro-kernel is written as multiply-adds precisely so that it does.
#pragma GCC optimize("fp-contract=fast")

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__AVX2__)
#define EMBER_GEMM_RUNTIME_ISA 1
#endif

namespace ember::flex::gemm_detail {

// Vectors of B bytes (an alias template would drop the attribute on a dependent type).
template <class T, int B> struct VecOf;
#define EMBER_VEC(T, B) \
  template <> struct VecOf<T, B> { typedef T type __attribute__((vector_size(B))); };
EMBER_VEC(float, 16) EMBER_VEC(float, 32) EMBER_VEC(float, 64)
EMBER_VEC(double, 16) EMBER_VEC(double, 32) EMBER_VEC(double, 64)
#undef EMBER_VEC
template <class T> using Vec = typename VecOf<T, 64>::type;
template <class T> inline constexpr int kLanes = int(64 / sizeof(T));

// Tile shape: MR rows of A (broadcast) x NR columns of B (two 64-byte vectors). With AVX-512 the
// 12 x 2 accumulators plus two B vectors and a broadcast fill 27 of the 32 registers; narrower
// ISAs sweep the same packed tile in column passes that fit their register file.
template <class T> struct Tile {
  static constexpr int MR = 12, NR = 2 * kLanes<T>;
  // Depth of one block: the A sliver (MR x KC) stays in L1 while B slivers stream from L2.
  static constexpr int64_t KC = 512 * 4 / int64_t(sizeof(T));
  // Columns of one packed B block (KC x NC, ~1 MB): it stays in each core's L2.
  static constexpr int64_t NC = 512;
  // Rows of one packed A block (MC x KC, in L3): A is packed once per depth block and row block.
  static constexpr int64_t MC = 2040;
};

// C[mr x nr] (+)= A sliver (kc x MR) * B sliver (kc x NR), in passes of NVP vectors of VB bytes,
// computing the first ROWS rows of the sliver only: a partial last sliver (m = 16 is one full
// sliver and 4 rows) would otherwise cost a whole tile of padding.
template <class T, int VB, int NVP, int ROWS>
__attribute__((always_inline)) inline void micro_body(int64_t kc, const T* __restrict a,
                                                      const T* __restrict b, T* __restrict c,
                                                      int64_t ldc, int mr, int nr, bool acc) {
  using V = typename VecOf<T, VB>::type;
  constexpr int MR = Tile<T>::MR, NR = Tile<T>::NR, L = VB / int(sizeof(T)), W = NVP * L;
  static_assert(NR % W == 0 && ROWS <= MR);
  a = static_cast<const T*>(__builtin_assume_aligned(a, 64));
  b = static_cast<const T*>(__builtin_assume_aligned(b, 64));
  const bool full = mr == ROWS && nr == NR;
  alignas(64) T tile[ROWS * NR];
  for (int j0 = 0; j0 < NR; j0 += W) {
    V r[ROWS][NVP];
    for (int i = 0; i < ROWS; ++i)
      for (int v = 0; v < NVP; ++v) r[i][v] = V{};
    for (int64_t p = 0; p < kc; ++p) {
      V bv[NVP];
      for (int v = 0; v < NVP; ++v) bv[v] = *reinterpret_cast<const V*>(b + p * NR + j0 + v * L);
#pragma GCC unroll 16
      for (int i = 0; i < ROWS; ++i) {
        const T s = a[p * MR + i];
        for (int v = 0; v < NVP; ++v) r[i][v] += s * bv[v];
      }
    }
    for (int i = 0; i < ROWS; ++i)
      for (int v = 0; v < NVP; ++v) {
        if (!full) {
          std::memcpy(tile + i * NR + j0 + v * L, &r[i][v], sizeof(V));
          continue;
        }
        T* dst = c + i * ldc + j0 + v * L;
        V out = r[i][v];
        if (acc) {
          V old;
          std::memcpy(&old, dst, sizeof(V));
          out += old;
        }
        std::memcpy(dst, &out, sizeof(V));
      }
  }
  if (full) return;
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j)
      c[i * ldc + j] = acc ? c[i * ldc + j] + tile[i * NR + j] : tile[i * NR + j];
}

template <class T>
using MicroFn = void (*)(int64_t, const T*, const T*, T*, int64_t, int, int, bool);
// One kernel per row count 4, 8 and 12 (MR): micro() takes the smallest that covers mr.
template <class T>
using MicroSet = std::array<MicroFn<T>, 3>;

#define EMBER_MICRO(name, attr, VB, NVP)                                                      \
  template <class T, int ROWS>                                                                 \
  attr void name(int64_t kc, const T* a, const T* b, T* c, int64_t ldc, int mr, int nr,       \
                 bool acc) {                                                                   \
    micro_body<T, VB, NVP, ROWS>(kc, a, b, c, ldc, mr, nr, acc);                               \
  }                                                                                            \
  template <class T>                                                                           \
  MicroSet<T> name##_set() {                                                                   \
    return {name<T, 4>, name<T, 8>, name<T, Tile<T>::MR>};                                     \
  }
#if defined(__AVX512F__)
EMBER_MICRO(micro_native, , 64, 2)
#elif defined(__AVX2__)
EMBER_MICRO(micro_native, , 32, 1)
#else
EMBER_MICRO(micro_native, , 16, 1)
#endif
#ifdef EMBER_GEMM_RUNTIME_ISA
EMBER_MICRO(micro_avx512, __attribute__((target("avx512f,fma"))), 64, 2)
EMBER_MICRO(micro_avx2, __attribute__((target("avx2,fma"))), 32, 1)
#endif
#undef EMBER_MICRO

template <class T>
MicroSet<T> pick_micro() {
  static_assert(Tile<T>::MR == 12, "the row variants are 4, 8 and MR");
#ifdef EMBER_GEMM_RUNTIME_ISA
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return micro_avx512_set<T>();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return micro_avx2_set<T>();
#endif
  return micro_native_set<T>();
}

template <class T>
inline void micro(int64_t kc, const T* a, const T* b, T* c, int64_t ldc, int mr, int nr,
                  bool acc) {
  static const MicroSet<T> fns = pick_micro<T>();
  fns[size_t((mr - 1) / 4)](kc, a, b, c, ldc, mr, nr, acc);
}

}  // namespace ember::flex::gemm_detail

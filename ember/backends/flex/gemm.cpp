// flex GEMM: BLIS-style blocking (KC of the depth, MC rows of A, NC columns of B) around a
// register-blocked MR x NR micro-kernel. Packed blocks are contiguous and padded with zeros to
// whole slivers, so the micro-kernel never branches on edges.
//
// The micro-kernel is plain C++ on GCC vector types. Built with -march=native it is compiled once
// for the host's widest vectors; a portable x86-64 build carries AVX-512, AVX2+FMA and SSE2
// variants and picks one at start-up (a function pointer set from __builtin_cpu_supports: GCC's
// target_clones resolvers run before libgcc's CPU probe is usable and silently pick the baseline).
//
// The build uses ISO C++, where GCC does not fuse a * b + c into an FMA unless told to; the
// micro-kernel and dot loops are written as multiply-adds precisely so that it does.
#pragma GCC optimize("fp-contract=fast")

#include "ember/backends/flex/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "ember/backends/flex/thread_pool.h"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__AVX2__)
#define EMBER_GEMM_RUNTIME_ISA 1
#endif

namespace ember::flex {
namespace {

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

// C[mr x nr] (+)= A sliver (kc x MR) * B sliver (kc x NR), in passes of NVP vectors of VB bytes.
template <class T, int VB, int NVP>
__attribute__((always_inline)) inline void micro_body(int64_t kc, const T* __restrict a,
                                                      const T* __restrict b, T* __restrict c,
                                                      int64_t ldc, int mr, int nr, bool acc) {
  using V = typename VecOf<T, VB>::type;
  constexpr int MR = Tile<T>::MR, NR = Tile<T>::NR, L = VB / int(sizeof(T)), W = NVP * L;
  static_assert(NR % W == 0);
  a = static_cast<const T*>(__builtin_assume_aligned(a, 64));
  b = static_cast<const T*>(__builtin_assume_aligned(b, 64));
  const bool full = mr == MR && nr == NR;
  alignas(64) T tile[MR * NR];
  for (int j0 = 0; j0 < NR; j0 += W) {
    V r[MR][NVP];
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NVP; ++v) r[i][v] = V{};
    for (int64_t p = 0; p < kc; ++p) {
      V bv[NVP];
      for (int v = 0; v < NVP; ++v) bv[v] = *reinterpret_cast<const V*>(b + p * NR + j0 + v * L);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const T s = a[p * MR + i];
        for (int v = 0; v < NVP; ++v) r[i][v] += s * bv[v];
      }
    }
    for (int i = 0; i < MR; ++i)
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

#define EMBER_MICRO(name, attr, VB, NVP)                                                     \
  template <class T>                                                                          \
  attr void name(int64_t kc, const T* a, const T* b, T* c, int64_t ldc, int mr, int nr,      \
                 bool acc) {                                                                  \
    micro_body<T, VB, NVP>(kc, a, b, c, ldc, mr, nr, acc);                                    \
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
MicroFn<T> pick_micro() {
#ifdef EMBER_GEMM_RUNTIME_ISA
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return micro_avx512<T>;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return micro_avx2<T>;
#endif
  return micro_native<T>;
}

template <class T>
inline void micro(int64_t kc, const T* a, const T* b, T* c, int64_t ldc, int mr, int nr,
                  bool acc) {
  static const MicroFn<T> fn = pick_micro<T>();
  fn(kc, a, b, c, ldc, mr, nr, acc);
}

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
      for (int i = 0; i < mr; ++i) {
        const T* src = a.p + (i0 + s * MR + i) * a.rs + p0 * a.cs;
        if (a.cs == 1) for (int64_t p = 0; p < kc; ++p) d[p * MR + i] = src[p];
        else for (int64_t p = 0; p < kc; ++p) d[p * MR + i] = src[p * a.cs];
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
      std::memcpy(d, b.p + (p0 + p) * b.rs + j0, size_t(nr) * sizeof(T));
      for (int j = nr; j < NR; ++j) d[j] = T(0);
    }
    return;
  }
  // Column-major (transposed) B: walk each column down the depth, in chunks of depth whose
  // destination stays in L1.
  constexpr int64_t kChunk = 64;
  for (int64_t q = 0; q < kc; q += kChunk) {
    const int64_t qe = std::min(kc, q + kChunk);
    for (int j = 0; j < nr; ++j) {
      const T* src = b.p + (j0 + j) * b.cs + p0 * b.rs;
      if (b.rs == 1) for (int64_t p = q; p < qe; ++p) dst[p * NR + j] = src[p];
      else for (int64_t p = q; p < qe; ++p) dst[p * NR + j] = src[p * b.rs];
    }
    for (int64_t p = q; p < qe; ++p)
      for (int j = nr; j < NR; ++j) dst[p * NR + j] = T(0);
  }
}

template <class T>
void gemm_packed(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
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
    parallel_for(m, std::max<int64_t>(1, 32768 / std::max<int64_t>(k, 1)), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        T v = dot<T>(k, a.p + i * a.rs, a.cs, b.p, b.rs);
        c[i * ldc] = accumulate ? c[i * ldc] + v : v;
      }
    });
    return;
  }
  // m == 1: c[j] = a . B[:, j]. Row-major B: accumulate rows (contiguous, vectorises).
  parallel_for(n, std::max<int64_t>(256, 32768 / std::max<int64_t>(k, 1)), [&](int64_t j0, int64_t j1) {
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
          s += uint64_t(int64_t(a.p[i * a.rs + p * a.cs])) * uint64_t(int64_t(b.p[p * b.rs + j * b.cs]));
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
    for (int64_t i = 0; i < n; ++i) r += uint64_t(int64_t(x[i * incx])) * uint64_t(int64_t(y[i * incy]));
    return T(r);
  }
}

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
          bool accumulate) {
  if constexpr (std::is_floating_point_v<T>) gemm_float(m, n, k, a, b, c, ldc, accumulate);
  else gemm_int(m, n, k, a, b, c, ldc, accumulate);
}

#define EMBER_GEMM_INST(T)                                                                  \
  template void gemm<T>(int64_t, int64_t, int64_t, MatRef<T>, MatRef<T>, T*, int64_t, bool); \
  template T dot<T>(int64_t, const T*, int64_t, const T*, int64_t);
EMBER_GEMM_INST(float) EMBER_GEMM_INST(double) EMBER_GEMM_INST(uint8_t) EMBER_GEMM_INST(int8_t)
EMBER_GEMM_INST(int16_t) EMBER_GEMM_INST(int32_t) EMBER_GEMM_INST(int64_t)
#undef EMBER_GEMM_INST

}  // namespace ember::flex

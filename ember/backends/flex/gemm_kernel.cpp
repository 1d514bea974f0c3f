// The flex GEMM's kernel tables: gemm_micro.h's bodies instantiated once per instruction set,
// the run-time choice between them, and the cache blocking.
#include "ember/backends/flex/gemm_micro.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>

#if defined(__GNUC__) && defined(__x86_64__)
#define EMBER_GEMM_X86 1
#endif

namespace ember::flex {
namespace gemm_detail {
namespace {

// Rows per register pass of the micro-kernel: AVX-512's 32 registers hold the whole 12-row tile
// (24 accumulators of two vectors each); 16 registers hold 6 rows (12 accumulators, two B
// vectors and a broadcast), or 4 rows of the 4- and 8-row kernels.
constexpr int row_block(int vb, int rows) { return vb == 64 ? rows : rows == 12 ? 6 : 4; }
constexpr int clamp_rows(int r, int max) { return r < max ? r : max; }

// One ISA's table: micro-kernels of 4, 8 and 12 rows; dot kernels of 1 .. DR rows x DC columns
// (DR x DC accumulators plus DR rows of A and one column of B in registers).
#define EMBER_GEMM_ISA(name, attr, VB, DR, DC)                                                   \
  template <class T, int ROWS>                                                                  \
  attr void name##_micro(int64_t kc, const T* a, const T* b, int64_t ldb, T* c, int64_t ldc,    \
                         int mr, int nr, bool acc, const T* bias) {                             \
    micro_body<T, VB, 2, row_block(VB, ROWS), ROWS>(kc, a, b, ldb, c, ldc, mr, nr, acc, bias);  \
  }                                                                                             \
  template <class T, int R>                                                                     \
  attr void name##_dot(int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,       \
                       int64_t ldc, int nj, bool acc, const T* bias) {                          \
    dot_body<T, VB, R, DC>(k, a, lda, b, ldb, c, ldc, nj, acc, bias);                           \
  }                                                                                             \
  template <class T>                                                                            \
  Kernels<T> name##_kernels() {                                                                 \
    return {{name##_micro<T, 4>, name##_micro<T, 8>, name##_micro<T, Tile<T>::MR>},            \
            {name##_dot<T, 1>, name##_dot<T, clamp_rows(2, DR)>, name##_dot<T, clamp_rows(3, DR)>, \
             name##_dot<T, clamp_rows(4, DR)>},                                                 \
            DR,                                                                                 \
            DC};                                                                                \
  }
static_assert(kMaxDotRows == 4, "the dot tables list 4 row counts");

// The baseline works on 16-byte vectors: SSE2 on x86-64, NEON on arm64, and WebAssembly's
// 128-bit SIMD when the build has -msimd128 (the wasm preset; chosen at build time, as wasm has
// no run-time feature detection). 2 x 6 accumulators fit the 16 registers engines map v128 to.
EMBER_GEMM_ISA(baseline, , 16, 2, 6)
#ifdef EMBER_GEMM_X86
EMBER_GEMM_ISA(avx2, __attribute__((target("avx2,fma"))), 32, 2, 6)
EMBER_GEMM_ISA(avx512, __attribute__((target("avx512f,fma"))), 64, 4, 6)
#endif
#undef EMBER_GEMM_ISA

bool runs(GemmIsa isa) {
  if (isa == GemmIsa::Baseline) return true;
#ifdef EMBER_GEMM_X86
  __builtin_cpu_init();
  if (isa == GemmIsa::Avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == GemmIsa::Avx512) return __builtin_cpu_supports("avx512f");
#endif
  return false;
}

std::atomic<int> g_isa{-1};

[[maybe_unused]] int64_t cache_size(int name, int64_t fallback) {
  const long v = sysconf(name);
  return v > 0 ? int64_t(v) : fallback;
}

}  // namespace

template <class T>
const Kernels<T>& kernels() {
#ifdef EMBER_GEMM_X86
  static const Kernels<T> table[3] = {baseline_kernels<T>(), avx2_kernels<T>(),
                                      avx512_kernels<T>()};
#else
  static const Kernels<T> table[3] = {baseline_kernels<T>(), baseline_kernels<T>(),
                                      baseline_kernels<T>()};
#endif
  return table[int(gemm_isa())];
}
template const Kernels<float>& kernels<float>();
template const Kernels<double>& kernels<double>();

template <class T>
const Blocking& blocking() {
  static const Blocking b = [] {
    constexpr int64_t MR = Tile<T>::MR, NR = Tile<T>::NR, E = int64_t(sizeof(T));
#ifdef _SC_LEVEL1_DCACHE_SIZE
    const int64_t l1 = cache_size(_SC_LEVEL1_DCACHE_SIZE, 32 << 10);
    const int64_t l2 = cache_size(_SC_LEVEL2_CACHE_SIZE, 512 << 10);
#else  // no cache sizes to ask for (WebAssembly): typical ones
    const int64_t l1 = 32 << 10, l2 = 512 << 10;
#endif
    // Half of L1 for the A sliver, half of L2 for the B block; whole multiples of 64 and NR.
    const int64_t kc = std::clamp<int64_t>(l1 / 2 / (MR * E) / 64 * 64, 64, 2048 / E);
    const int64_t nc = std::clamp<int64_t>(l2 / 2 / (kc * E) / NR * NR, 4 * NR, 64 * NR);
    return Blocking{kc, nc};
  }();
  return b;
}
template const Blocking& blocking<float>();
template const Blocking& blocking<double>();

}  // namespace gemm_detail

const char* gemm_isa_name(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::Avx2: return "avx2";
    case GemmIsa::Avx512: return "avx512";
#ifdef __wasm_simd128__  // WebAssembly SIMD: the 16-byte baseline kernels are v128 code
    default: return "wasm-simd128";
#else
    default: return "baseline";
#endif
  }
}

GemmIsa gemm_isa() {
  int v = gemm_detail::g_isa.load(std::memory_order_relaxed);
  if (v < 0) {
    GemmIsa best = GemmIsa::Baseline;
    for (GemmIsa i : {GemmIsa::Avx2, GemmIsa::Avx512})
      if (gemm_detail::runs(i)) best = i;
    v = int(best);
    gemm_detail::g_isa.store(v, std::memory_order_relaxed);
  }
  return GemmIsa(v);
}

bool set_gemm_isa(GemmIsa isa) {
  if (!gemm_detail::runs(isa)) return false;
  gemm_detail::g_isa.store(int(isa), std::memory_order_relaxed);
  return true;
}

}  // namespace ember::flex

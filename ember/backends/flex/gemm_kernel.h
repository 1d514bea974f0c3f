#pragma once
// The flex GEMM's kernels as the driver sees them (private to the flex GEMM): the packed tile
// shape, the cache blocking, and one table of register-blocked kernels per instruction set,
// chosen at run time. The kernel bodies live in gemm_micro.h.
//
// Every x86-64 build carries AVX-512, AVX2+FMA and baseline (what the build's own flags allow,
// SSE2 for a portable build) variants and picks the widest the CPU runs on first use; other
// targets have the baseline only. target_clones would be the idiom, but with GCC 12 / glibc 2.36
// its load-time resolver picked the baseline clone on AVX-512 hosts, silently costing ~50x.
#include <cstdint>

namespace ember::flex {

/// The instruction sets the float GEMM kernels exist for.
enum class GemmIsa : uint8_t { Baseline, Avx2, Avx512 };
const char* gemm_isa_name(GemmIsa isa);
/// The kernels in use: the widest this CPU runs, unless set_gemm_isa chose others.
GemmIsa gemm_isa();
/// Uses `isa`'s kernels from now on (tests run every path this way); returns false and changes
/// nothing when this build or CPU lacks it. Not for use while products run on other threads.
bool set_gemm_isa(GemmIsa isa);

namespace gemm_detail {

// Vectors of B bytes (an alias template would drop the attribute on a dependent type).
template <class T, int B> struct VecOf;
#define EMBER_VEC(T, B) \
  template <> struct VecOf<T, B> { typedef T type __attribute__((vector_size(B))); };
EMBER_VEC(float, 16) EMBER_VEC(float, 32) EMBER_VEC(float, 64)
EMBER_VEC(double, 16) EMBER_VEC(double, 32) EMBER_VEC(double, 64)
#undef EMBER_VEC

// The packed tile: MR rows of A x NR columns of B (128 bytes: two AVX-512 vectors, four AVX2,
// eight SSE). Every ISA's micro-kernel reads the same packed layout and sweeps the tile in row
// and column passes that fit its register file.
template <class T> struct Tile {
  static constexpr int MR = 12, NR = int(128 / sizeof(T));
  // Rows of one packed A block (MC x KC); it only bounds the pack buffer.
  static constexpr int64_t MC = 2040;
};

/// Depth (KC) and column (NC) blocks from this CPU's caches: an A sliver (MR x KC) stays in L1
/// while a packed B block (KC x NC) stays in L2.
struct Blocking {
  int64_t kc, nc;
};
template <class T> const Blocking& blocking();

// C[mr x nr] (+)= A sliver (kc x MR, packed) * B sliver (kc x NR, row stride ldb: NR when packed,
// B's own row stride when read in place), then + bias[j] when bias is given. mr <= the kernel's
// row count, nr <= NR.
template <class T>
using MicroFn = void (*)(int64_t kc, const T* a, const T* b, int64_t ldb, T* c, int64_t ldc,
                         int mr, int nr, bool acc, const T* bias);
// C[R x nj] (+)= A rows (a + i * lda) . B columns (b + j * ldb), both contiguous along the depth,
// then + bias[j]; R is the kernel's row count, nj <= cols.
template <class T>
using DotFn = void (*)(int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
                       int64_t ldc, int nj, bool acc, const T* bias);

inline constexpr int kMaxDotRows = 4;

template <class T> struct Kernels {
  MicroFn<T> micro[3];          // 4, 8 and MR rows: micro_for() takes the smallest that covers mr
  DotFn<T> dot[kMaxDotRows];    // 1 .. dot_rows rows
  int dot_rows, dot_cols;       // the dot block this ISA's registers hold
};

template <class T> const Kernels<T>& kernels();

template <class T>
inline MicroFn<T> micro_for(const Kernels<T>& k, int mr) {
  return k.micro[(mr - 1) / 4];
}

}  // namespace gemm_detail
}  // namespace ember::flex

#pragma once
// Transposing copies for the flex GEMM's packing (private to gemm.cpp): an operand whose packed
// layout runs across its contiguous direction (row-major A, column-major B such as linear's
// weight) is transposed in register tiles of L x L elements (8 x 8 floats, 4 x 4 doubles) with
// vector shuffles, instead of one scalar store per element, which made packing W^T cost ~15% of
// a linear layer. Without __builtin_shufflevector (old GCC) the plain loop remains.
#include <cstdint>
#include <cstring>

namespace ember::flex::gemm_detail {

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define EMBER_GEMM_SHUFFLE 1
#endif
#endif

#ifdef EMBER_GEMM_SHUFFLE
template <class T> struct Vec32;
template <> struct Vec32<float> { typedef float type __attribute__((vector_size(32))); };
template <> struct Vec32<double> { typedef double type __attribute__((vector_size(32))); };

// r[i] <- column i of the 8 x 8 tile held in r (row i in r[i]).
inline void transpose_tile(typename Vec32<float>::type (&r)[8]) {
  using V = Vec32<float>::type;
  V t[8], u[8];
  for (int i = 0; i < 8; i += 2) {  // interleave row pairs within 128-bit halves
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 8; i += 4)
    for (int h = 0; h < 2; ++h) {  // gather 4-row columns within halves
      const V &x = t[i + h], &y = t[i + h + 2];
      u[i + 2 * h] = __builtin_shufflevector(x, y, 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 2 * h + 1] = __builtin_shufflevector(x, y, 2, 3, 10, 11, 6, 7, 14, 15);
    }
  for (int i = 0; i < 4; ++i) {  // join the halves of rows 0-3 and 4-7
    r[i] = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[i + 4] = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}
inline void transpose_tile(typename Vec32<double>::type (&r)[4]) {
  using V = Vec32<double>::type;
  V t[4];
  for (int i = 0; i < 4; i += 2) {
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 4, 2, 6);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 1, 5, 3, 7);
  }
  for (int i = 0; i < 2; ++i) {
    r[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 4, 5);
    r[i + 2] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 6, 7);
  }
}
#endif

/// dst[p * ldd + r] = src[r * lds + p] for r < rows, p < len: `rows` contiguous source vectors
/// become interleaved destination rows.
template <class T>
void transpose_into(const T* src, int64_t lds, int rows, int64_t len, T* __restrict dst,
                    int64_t ldd) {
  int r0 = 0;
#ifdef EMBER_GEMM_SHUFFLE
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    using V = typename Vec32<T>::type;
    constexpr int L = int(32 / sizeof(T));
    for (; r0 + L <= rows; r0 += L) {
      int64_t p = 0;
      for (; p + L <= len; p += L) {
        V v[L];
        for (int i = 0; i < L; ++i) std::memcpy(&v[i], src + (r0 + i) * lds + p, sizeof(V));
        transpose_tile(v);
        for (int i = 0; i < L; ++i) std::memcpy(dst + (p + i) * ldd + r0, &v[i], sizeof(V));
      }
      for (; p < len; ++p)
        for (int i = 0; i < L; ++i) dst[p * ldd + r0 + i] = src[(r0 + i) * lds + p];
    }
  }
#endif
  for (int r = r0; r < rows; ++r) {
    const T* s = src + r * lds;
    for (int64_t p = 0; p < len; ++p) dst[p * ldd + r] = s[p];
  }
}

}  // namespace ember::flex::gemm_detail

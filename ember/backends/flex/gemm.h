#pragma once
// flex's own matrix product (private to the flex backend): C = A * B (+ C) for strided A and B.
// Floating types pack A and B panels into contiguous blocks sized for L1/L2 and run a
// register-blocked micro-kernel written with GCC vector extensions, so the compiler emits
// full-width FMAs without any intrinsics or BLAS; skinny shapes skip the packing. The kernels
// for AVX-512, AVX2 and the baseline are chosen at run time (gemm_kernel.h). Integer types use a
// plain exact loop.
#include <cstdint>

namespace ember::flex {

/// A strided matrix operand: element (r, c) lives at p[r * rs + c * cs]. Transposes are just
/// swapped strides; packing reads any layout, so callers never copy to make operands contiguous.
template <class T>
struct MatRef {
  const T* p = nullptr;
  int64_t rs = 0, cs = 0;
  MatRef t() const { return {p, cs, rs}; }
};

/// One product C[m, n] = A[m, k] * B[k, n], or C += A * B when `accumulate`, plus bias[j] on
/// every row when `bias` (n values) is given: added as the kernels write C, so a linear layer's
/// bias costs no pass of its own. C is row-major with row stride `ldc`. Splits the work over the
/// thread pool, or runs inline when called from inside a parallel region (batched callers
/// parallelise over their batch instead).
/// Defined for float, double and the integer types (uint8_t, int8_t, int16_t, int32_t, int64_t);
/// integers wrap like torch's (two's complement).
template <class T>
void gemm(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
          bool accumulate, const T* bias = nullptr);

/// A B operand produced on the fly, such as a convolution's im2col matrix: fn writes B's depth
/// rows [p0, p0 + kc) x columns [j0, j0 + nr) to dst[(p - p0) * ld + (j - j0)] and may be called
/// from several threads at once.
template <class T>
struct PackedSource {
  void (*fn)(const void* ctx, int64_t p0, int64_t kc, int64_t j0, int64_t nr, T* dst, int64_t ld);
  const void* ctx;
};
/// gemm() reading B through a PackedSource (float and double).
template <class T>
void gemm(int64_t m, int64_t n, int64_t k, MatRef<T> a, PackedSource<T> b, T* c, int64_t ldc,
          bool accumulate);

/// sum_i x[i * incx] * y[i * incy], accumulated in T (float lanes for float).
template <class T>
T dot(int64_t n, const T* x, int64_t incx, const T* y, int64_t incy);

}  // namespace ember::flex

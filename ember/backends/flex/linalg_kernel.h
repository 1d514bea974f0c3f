#pragma once
// What flex's linalg kernels (linalg_decomp.cpp) and the cpu backend's LAPACK ones
// (ember/backends/cpu/lapack_linalg.cpp) share (private): the f32/f64 (and c64/c128) dispatch,
// typed data pointers, outputs that start as a copy of an input, and the determinant from an LU.
#include <cmath>
#include <complex>
#include <cstring>
#include <type_traits>

#include "ember/backends/flex/loops.h"

namespace ember::flex::linalg_kernel {

constexpr DTypeMask kReal = mask_of(DType::F32) | mask_of(DType::F64);

/// f(T{}) with T = double for f64, float for f32 (the kernels are registered for those only).
template <class F> void dispatch_real(DType d, const F& f) {
  if (d == DType::F64) f(double{});
  else f(float{});
}

/// The kernels that also take complex64/complex128 (det, slogdet, cholesky, qr, svd, eigh).
constexpr DTypeMask kRealComplex = kReal | mask_of(DType::C64) | mask_of(DType::C128);

/// f(T{}) for every dtype of kRealComplex (std::complex<float>/<double> for c64/c128).
template <class F> void dispatch_scalar(DType d, const F& f) {
  switch (d) {
    case DType::F64: f(double{}); break;
    case DType::C64: f(std::complex<float>{}); break;
    case DType::C128: f(std::complex<double>{}); break;
    default: f(float{}); break;
  }
}

template <class T> T* data(const Tensor& t) { return static_cast<T*>(t.raw_data()); }

/// Output i holding a contiguous copy of `src` (same shape and dtype).
inline Tensor output_copy(const OpCall& c, int i, const Tensor& src) {
  Tensor out = new_output(c, i);
  Tensor s = src.contiguous();
  if (out.numel()) std::memcpy(out.raw_data(), s.raw_data(), size_t(out.nbytes()));
  return out;
}

/// det, or (sign, log|det|), of an n x n matrix from its LU (row-major or column-major: only
/// the diagonal is read) and 1-based pivots. A complex sign is det / |det| (0 for det 0).
template <class T, class P, class R>
void det_from_lu(const T* lu, int64_t n, const P* piv, T& det, T& sign, R& logabs) {
  det = 1, sign = 1, logabs = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T u = lu[i * n + i];
    if (int64_t(piv[i]) != i + 1) sign = -sign, det = -det;
    det *= u;
    const R mag = std::abs(u);
    if constexpr (std::is_same_v<T, R>) sign *= u > T(0) ? T(1) : u < T(0) ? T(-1) : T(0);
    else sign *= mag > R(0) ? u / mag : T(0);
    logabs += std::log(mag);
  }
}

}  // namespace ember::flex::linalg_kernel

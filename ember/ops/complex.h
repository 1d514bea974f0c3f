#pragma once
// Complex tensors (complex64 / complex128): construction from parts, the parts as views, and the
// complex functions (docs/tensors.md, "Complex numbers"). Arithmetic, sum/mean, matmul, abs,
// exp/log/sqrt and comparisons for equality take complex tensors through the ordinary ops.
// std::complex element access (tensor(std::vector<std::complex<float>>), item, to_vector) needs
// <ember/complex.h>, which includes <complex>.
#include "ember/tensor.h"

namespace ember {

/// real + i imag (torch.complex): float32 parts give complex64, float64 parts complex128; the
/// parts broadcast and must have the same floating dtype.
Tensor complex(const Tensor& real, const Tensor& imag);
/// abs * (cos(angle) + i sin(angle)) (torch.polar).
Tensor polar(const Tensor& abs, const Tensor& angle);
/// The real part: a strided view of a complex tensor (writes go through), `x` itself otherwise.
Tensor real(const Tensor& x);
/// The imaginary part: a strided view of a complex tensor; refused for real tensors (torch).
Tensor imag(const Tensor& x);
/// The complex conjugate, materialised (torch returns a lazy conj view); `x` itself when real.
Tensor conj(const Tensor& x);
/// The same as conj: ember's conj is always physical.
Tensor conj_physical(const Tensor& x);
/// The argument atan2(imag, real) in radians; for a real tensor 0 or pi (NaN stays NaN).
Tensor angle(const Tensor& x);
/// A complex tensor as real of shape [..., 2] (real, imaginary), sharing storage.
Tensor view_as_real(const Tensor& x);
/// A real float32/float64 tensor of shape [..., 2] with a last stride of 1 (and even other
/// strides and offset) viewed as complex, sharing storage.
Tensor view_as_complex(const Tensor& x);

}  // namespace ember

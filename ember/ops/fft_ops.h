#pragma once
// The FFT's registry ops (private; ember/ops/fft_ops.cpp), as torch's _fft_c2c, _fft_r2c and
// _fft_c2r: `dims` wrapped, `norm` 0 none, 1 by 1/sqrt(n), 2 by 1/n (n the product of the
// signal sizes over dims; for c2r, of the output).
#include "ember/shape.h"
#include "ember/tensor.h"

namespace ember::fft::detail {

/// The DFT of complex x over dims (forward: e^-2 pi i jk / n; else e^+).
Tensor c2c(const Tensor& x, const Shape& dims, int norm, bool forward);
/// The forward DFT of real x over dims; onesided keeps n / 2 + 1 of the last dim's frequencies.
Tensor r2c(const Tensor& x, const Shape& dims, int norm, bool onesided);
/// The real inverse DFT of a Hermitian spectrum over dims (the last holds its first half,
/// last_dim_size / 2 + 1 points), last_dim_size points along the last dim.
Tensor c2r(const Tensor& x, const Shape& dims, int norm, int64_t last_dim_size);

}  // namespace ember::fft::detail

#pragma once
// Discrete Fourier transforms with torch.fft's names and arguments (docs/linalg.md, "FFT"):
// any length (mixed radix, Bluestein for large prime factors), along any dim, with the norms
// "backward" (default: the inverse scales by 1/n), "ortho" (1/sqrt(n) both ways) and "forward"
// (the forward transform scales by 1/n). Written in ember ops on complex tensors, so every host
// device runs them and autodiff differentiates them. Not included by <ember/ember.h>.
#include <optional>
#include <string>

#include "ember/tensor.h"

namespace ember::fft {

/// The DFT of `x` along `dim` (real input is promoted to complex), trimmed or zero-padded to
/// `n` points first when given.
Tensor fft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1,
           const std::string& norm = "backward");
/// The inverse DFT.
Tensor ifft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1,
            const std::string& norm = "backward");
/// The DFT of a real signal: the n / 2 + 1 non-negative frequencies.
Tensor rfft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1,
            const std::string& norm = "backward");
/// The inverse of rfft: a real signal of `n` points (default 2 * (size - 1)) from its
/// non-negative frequencies (the imaginary parts of the zero and, for even n, the Nyquist
/// frequency are ignored, as torch does).
Tensor irfft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1,
             const std::string& norm = "backward");

}  // namespace ember::fft

#pragma once
// Discrete Fourier transforms with torch.fft's names and arguments (docs/linalg.md, "FFT"):
// any length (mixed radix, Bluestein for large prime factors), along any dim, with the norms
// "backward" (default: the inverse scales by 1/n), "ortho" (1/sqrt(n) both ways) and "forward"
// (the forward transform scales by 1/n). Each dispatches the FFT's registry ops (torch's
// _fft_c2c / _fft_r2c / _fft_c2r), whose kernels run natively on flex and cpu (mixed-radix plans
// with precomputed twiddles, threaded), under autodiff too: their gradients are FFTs. Not
// included by <ember/ember.h>.
#include <optional>
#include <string>

#include "ember/shape.h"
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

/// The DFT of a Hermitian-symmetric signal given by its first half (a real result of `n`
/// points, default 2 * (size - 1)).
Tensor hfft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1,
            const std::string& norm = "backward");
/// The inverse of hfft: the n / 2 + 1 first points of the inverse DFT of a real signal.
Tensor ihfft(const Tensor& x, std::optional<int64_t> n = {}, int64_t dim = -1,
             const std::string& norm = "backward");

// n-dimensional transforms: over `dim` (default: the last s.size() dims, or every dim), each
// trimmed or zero-padded to s[i] points (-1 keeps the size), the norm applied over all of them.
/// The 2-D DFT (dims -2 and -1 by default).
Tensor fft2(const Tensor& x, std::optional<Shape> s = {}, Shape dim = {-2, -1},
            const std::string& norm = "backward");
/// The inverse 2-D DFT.
Tensor ifft2(const Tensor& x, std::optional<Shape> s = {}, Shape dim = {-2, -1},
             const std::string& norm = "backward");
/// The n-D DFT.
Tensor fftn(const Tensor& x, std::optional<Shape> s = {}, std::optional<Shape> dim = {},
            const std::string& norm = "backward");
/// The inverse n-D DFT.
Tensor ifftn(const Tensor& x, std::optional<Shape> s = {}, std::optional<Shape> dim = {},
             const std::string& norm = "backward");
/// The 2-D DFT of a real signal (the last dim halved, as rfft).
Tensor rfft2(const Tensor& x, std::optional<Shape> s = {}, Shape dim = {-2, -1},
             const std::string& norm = "backward");
/// The inverse of rfft2: a real signal (the last dim 2 * (size - 1) unless s says).
Tensor irfft2(const Tensor& x, std::optional<Shape> s = {}, Shape dim = {-2, -1},
              const std::string& norm = "backward");
/// The n-D DFT of a real signal.
Tensor rfftn(const Tensor& x, std::optional<Shape> s = {}, std::optional<Shape> dim = {},
             const std::string& norm = "backward");
/// The inverse of rfftn.
Tensor irfftn(const Tensor& x, std::optional<Shape> s = {}, std::optional<Shape> dim = {},
              const std::string& norm = "backward");

/// The 2-D DFT of a Hermitian signal given by its first half along the last of `dim` (a real
/// result, the last dim 2 * (size - 1) unless s says).
Tensor hfft2(const Tensor& x, std::optional<Shape> s = {}, Shape dim = {-2, -1},
             const std::string& norm = "backward");
/// The inverse of hfft2: the last dim halved, as rfft2 (of the inverse transform).
Tensor ihfft2(const Tensor& x, std::optional<Shape> s = {}, Shape dim = {-2, -1},
              const std::string& norm = "backward");
/// The n-D DFT of a Hermitian signal.
Tensor hfftn(const Tensor& x, std::optional<Shape> s = {}, std::optional<Shape> dim = {},
             const std::string& norm = "backward");
/// The inverse of hfftn.
Tensor ihfftn(const Tensor& x, std::optional<Shape> s = {}, std::optional<Shape> dim = {},
              const std::string& norm = "backward");

/// The sample frequencies of an n-point DFT with sample spacing d: [0, 1, ..., -1] / (d n).
Tensor fftfreq(int64_t n, double d = 1.0, TensorOptions o = {});
/// The non-negative sample frequencies of an n-point rfft: [0, ..., n / 2] / (d n).
Tensor rfftfreq(int64_t n, double d = 1.0, TensorOptions o = {});
/// x with the zero frequency moved to the centre of `dim` (default every dim).
Tensor fftshift(const Tensor& x, std::optional<Shape> dim = {});
/// The inverse of fftshift.
Tensor ifftshift(const Tensor& x, std::optional<Shape> dim = {});

}  // namespace ember::fft

namespace ember {

// Windows as torch's: `periodic` (the default) gives the first n points of an n + 1 point
// symmetric window, for spectral analysis; float32 unless `o` says.
/// 0.5 - 0.5 cos(2 pi k / (N - 1)).
Tensor hann_window(int64_t window_length, bool periodic = true, TensorOptions o = {});
/// alpha - beta cos(2 pi k / (N - 1)).
Tensor hamming_window(int64_t window_length, bool periodic = true, double alpha = 0.54,
                      double beta = 0.46, TensorOptions o = {});
/// 0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1)).
Tensor blackman_window(int64_t window_length, bool periodic = true, TensorOptions o = {});
/// I0(beta sqrt(1 - (2 k / (N - 1) - 1)^2)) / I0(beta).
Tensor kaiser_window(int64_t window_length, bool periodic = true, double beta = 12.0,
                     TensorOptions o = {});

/// stft's options (torch.stft's keywords).
struct StftOptions {
  std::optional<int64_t> hop_length = {};  // default n_fft / 4
  std::optional<int64_t> win_length = {};  // default n_fft
  Tensor window = {};                      // default ones(win_length); centred in n_fft
  bool center = true;                      // pad n_fft / 2 each side first
  std::string pad_mode = "reflect";        // how center pads
  bool normalized = false;                 // scale by n_fft^-1/2
  std::optional<bool> onesided = {};       // default: real input and window
  bool return_complex = true;              // false: the real view [batch..., freq, frames, 2]
};
/// The short-time Fourier transform of a 1-D signal or a [batch, time] batch: complex
/// [batch..., freq, frames] (or its real view, return_complex = false).
Tensor stft(const Tensor& x, int64_t n_fft, const StftOptions& o = {});

/// istft's options (torch.istft's keywords).
struct IstftOptions {
  std::optional<int64_t> hop_length = {};
  std::optional<int64_t> win_length = {};
  Tensor window = {};
  bool center = true;
  bool normalized = false;
  std::optional<bool> onesided = {};   // default: freq != n_fft
  std::optional<int64_t> length = {};  // trim or zero-pad the signal to this length
};
/// The inverse of stft: a real signal [batch..., time] by overlap-add.
Tensor istft(const Tensor& x, int64_t n_fft, const IstftOptions& o = {});

}  // namespace ember

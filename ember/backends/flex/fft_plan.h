#pragma once
// flex's FFT (private): a plan per length and precision, run by fft.cpp's kernels. Lengths whose
// prime factors are all at most kMaxRadix run an iterative Stockham (self-sorting) decimation in
// frequency, one pass per factor (radix 4, 2 and 3 butterflies written out, any other factor a
// generic O(p^2) one), ping-ponging between the data and one work buffer, with the twiddles of
// every pass precomputed in double precision. Other lengths run Bluestein's chirp-z transform:
// a circular convolution of a 2^a 3^b length m >= 2n - 1 through two forward transforms, the
// chirp's spectrum kept in the plan. A pass splits over flex's thread pool when it is large and
// the caller is not already running in parallel (a batch splits by rows instead). Long lengths
// (kSixStep and up) run as n1 x n2 with n1 ~ sqrt(n): transforms of the columns, twiddles,
// transforms of the rows, each in cache and split over the pool, with blocked transposes
// between them (Bailey's six-step FFT).
#include <cstdint>
#include <memory>
#include <vector>

#include "ember/tensor.h"

namespace ember::flex::fft {

/// The DFT along the last dim of a complex host tensor (e^{+2 pi i jk / n} when inverse),
/// times `scale`.
Tensor c2c(const Tensor& x, bool inverse, double scale);
/// The n / 2 + 1 non-negative frequencies of a real (f32/f64) host tensor's last dim,
/// conjugated when inverse, times `scale`.
Tensor r2c(const Tensor& x, bool inverse, double scale);
/// A real signal of n points from the first n / 2 + 1 frequencies (the last dim) of a
/// Hermitian spectrum, the imaginary parts of the zero and Nyquist terms ignored; the inverse
/// transform (irfft) or the forward one (hfft); times `scale`.
Tensor c2r(const Tensor& x, int64_t n, bool inverse, double scale);

/// A complex number laid out as std::complex<T> (and ember's c64/c128 storage), with plain
/// arithmetic: std::complex's operator* checks for NaNs and calls out of line.
template <class T>
struct Cx {
  T re, im;
};
template <class T>
inline Cx<T> operator+(Cx<T> a, Cx<T> b) {
  return {a.re + b.re, a.im + b.im};
}
template <class T>
inline Cx<T> operator-(Cx<T> a, Cx<T> b) {
  return {a.re - b.re, a.im - b.im};
}
template <class T>
inline Cx<T> operator*(Cx<T> a, Cx<T> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <class T>
inline Cx<T> operator*(Cx<T> a, T s) {
  return {a.re * s, a.im * s};
}
template <class T>
inline Cx<T> conj(Cx<T> a) {
  return {a.re, -a.im};
}

inline constexpr int64_t kMaxRadix = 64;  // a larger prime factor runs Bluestein
inline constexpr int64_t kSixStep = int64_t(1) << 16;

template <class T>
struct Plan {
  struct Pass {
    int p;                     // radix
    int64_t l1, ido;           // l1 transforms done before, ido = n / (l1 p)
    std::vector<Cx<T>> tw;     // forward twiddles w_{ido p}^{i j}, [(j - 1) ido + i]
    std::vector<Cx<T>> roots;  // generic radix: w_p^t, t < p
  };
  int64_t n = 0;
  std::vector<Pass> passes;
  // Six-step (n1 > 0): the column and row plans and the twiddles w_n^{i j}, [i n1 + j].
  int64_t n1 = 0, n2 = 0;
  std::shared_ptr<const Plan<T>> p1, p2;
  std::vector<Cx<T>> tw6;
  // Bluestein (passes empty, n > 1): the forward chirp w_j = e^{-i pi j^2 / n} and the
  // spectrum of its conjugate, zero-padded to m and scaled by 1 / m.
  int64_t m = 0;
  std::shared_ptr<const Plan<T>> sub;
  std::vector<Cx<T>> chirp, kernel;

  /// Work elements execute() needs beside the data.
  int64_t scratch_size() const { return m ? 2 * m : n; }
  /// The unnormalised DFT of data[0, n) in place (e^{+2 pi i jk / n} when inverse); `work`
  /// holds scratch_size() elements.
  void execute(Cx<T>* data, Cx<T>* work, bool inverse) const;
};

/// The plan for length n (n >= 1), shared and cached.
template <class T>
std::shared_ptr<const Plan<T>> plan_for(int64_t n);

/// The half-length twiddles of a real transform of even length n: e^{-2 pi i k / n}, k <= n / 2.
template <class T>
std::shared_ptr<const std::vector<Cx<T>>> real_twiddles(int64_t n);

}  // namespace ember::flex::fft

// torch.fft's 1-D front ends: each trims or zero-pads its input and dispatches one of the
// FFT's registry ops (ember/ops/fft_ops.cpp: fft_c2c, fft_r2c, fft_c2r, as torch's _fft_*),
// whose kernels are flex's native plans (ember/backends/flex/fft_plan.h: mixed-radix Stockham
// and six-step, Bluestein for large prime factors, real transforms through half-length complex
// ones) on flex and cpu, under autodiff too; their VJPs are FFTs again.
#include "ember/fft.h"

#include "ember/ember.h"
#include "ember/ops/fft_detail.h"
#include "ember/ops/fft_ops.h"

namespace ember::fft {
namespace detail {
namespace {
enum class Norm { Backward, Ortho, Forward };

Norm parse_norm(const char* op, const std::string& s) {
  if (s == "backward" || s.empty()) return Norm::Backward;
  if (s == "ortho") return Norm::Ortho;
  if (s == "forward") return Norm::Forward;
  ember::detail::throw_value(
      op, "norm must be \"backward\", \"ortho\" or \"forward\", found \"" + s + "\"");
}

}  // namespace

Tensor as_complex_input(const Tensor& x) {
  if (is_complex(x.dtype())) return x;
  const DType f = is_floating(x.dtype()) && x.dtype() != DType::F16 && x.dtype() != DType::BF16
                      ? x.dtype()
                      : default_dtype();
  return x.to(complex_dtype_for(f));
}

Tensor as_real_input(const Tensor& x) {
  const DType d = x.dtype() == DType::F32 || x.dtype() == DType::F64 ? x.dtype() : default_dtype();
  return x.dtype() == d ? x : x.to(d);
}

Tensor fit(const Tensor& x, int64_t n, int64_t dim) {
  const int64_t have = x.size(dim);
  if (have == n) return x;
  if (have > n) return narrow(x, dim, 0, n);
  Shape p(size_t(2 * (x.dim() - dim)), 0);
  p[p.size() - 1] = n - have;
  return pad(x, p);
}

int norm_mode(const char* op, const std::string& norm, bool forward) {
  const Norm nm = parse_norm(op, norm);
  if (nm == Norm::Ortho) return 1;
  return (nm == Norm::Forward) == forward ? 2 : 0;
}

}  // namespace detail

using detail::as_complex_input;
using detail::as_real_input;
using detail::fit;
using detail::norm_mode;

namespace {

// The dim of a 1-D transform, checked, and its number of points (n, or the size).
int64_t signal_dim(const char* op, const Tensor& x, int64_t dim) {
  if (!x.defined()) ember::detail::throw_value(op, "the input is undefined");
  if (x.dim() == 0) ember::detail::throw_shape(op, "expected a tensor of at least 1 dim");
  return wrap_dim(dim, x.dim(), op);
}

int64_t points(const char* op, std::optional<int64_t> n, int64_t fallback) {
  const int64_t len = n.value_or(fallback);
  if (len < 1) ember::detail::throw_value(op, "invalid number of points " + std::to_string(len));
  return len;
}

void require_real(const char* op, const Tensor& x) {
  if (x.defined() && is_complex(x.dtype()))
    ember::detail::throw_dtype(op, "expected a real input, found " + std::string(dtype_name(x.dtype())));
}

Tensor c2c_1d(const char* op, const Tensor& input, std::optional<int64_t> n, int64_t dim,
              const std::string& norm, bool forward) {
  const int64_t d = signal_dim(op, input, dim);
  const int64_t len = points(op, n, input.size(d));
  return detail::c2c(fit(as_complex_input(input), len, d), {d}, norm_mode(op, norm, forward), forward);
}

}  // namespace

Tensor fft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return c2c_1d("fft", x, n, dim, norm, true);
}
Tensor ifft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return c2c_1d("ifft", x, n, dim, norm, false);
}

Tensor rfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  const char* op = "rfft";
  require_real(op, x);
  const int64_t d = signal_dim(op, x, dim);
  const int64_t len = points(op, n, x.size(d));
  return detail::r2c(fit(as_real_input(x), len, d), {d}, norm_mode(op, norm, true), true);
}

Tensor irfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  const char* op = "irfft";
  const int64_t d = signal_dim(op, x, dim);
  const int64_t len = points(op, n, 2 * (x.size(d) - 1));
  return detail::c2r(fit(as_complex_input(x), len / 2 + 1, d), {d}, norm_mode(op, norm, false), len);
}

// hfft is the forward transform of a Hermitian signal: c2r of the conjugate (torch's).
Tensor hfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  const char* op = "hfft";
  const int64_t d = signal_dim(op, x, dim);
  const int64_t len = points(op, n, 2 * (x.size(d) - 1));
  return detail::c2r(conj(fit(as_complex_input(x), len / 2 + 1, d)), {d}, norm_mode(op, norm, true), len);
}

Tensor ihfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  const char* op = "ihfft";
  require_real(op, x);
  const int64_t d = signal_dim(op, x, dim);
  const int64_t len = points(op, n, x.size(d));
  return conj(detail::r2c(fit(as_real_input(x), len, d), {d}, norm_mode(op, norm, false), true));
}

}  // namespace ember::fft

// torch.fft's n-dimensional transforms (each one registry op over all its dims, or two for the
// Hermitian ones, as torch), the sample frequencies, the shifts and the windows.
#include <cmath>
#include <numbers>
#include <vector>

#include "ember/ember.h"
#include "ember/fft.h"
#include "ember/ops/fft_detail.h"
#include "ember/ops/fft_ops.h"

namespace ember::fft {
namespace {

struct Plan {
  Shape dims;
  std::vector<std::optional<int64_t>> lens;
};

// torch's rule: dims default to the last s.size() dims (or every dim without s); s and dims
// pair up; s[i] == -1 keeps that dim's size.
Plan plan_nd(const char* op, const Tensor& x, const std::optional<Shape>& s,
             const std::optional<Shape>& dim) {
  if (!x.defined()) ember::detail::throw_value(op, "the input is undefined");
  Plan p;
  if (dim) {
    for (int64_t d : *dim) p.dims.push_back(wrap_dim(d, x.dim(), op));
    for (size_t i = 0; i < p.dims.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (p.dims[i] == p.dims[j]) ember::detail::throw_value(op, "dims must be unique");
    if (s && s->size() != dim->size())
      ember::detail::throw_value(op, "s has " + std::to_string(s->size()) + " sizes for " +
                                         std::to_string(dim->size()) + " dims");
  } else {
    const int64_t k = s ? int64_t(s->size()) : x.dim();
    if (k > x.dim())
      ember::detail::throw_value(op, "s has " + std::to_string(k) + " sizes for a tensor of " +
                                         std::to_string(x.dim()) + " dims");
    for (int64_t d = x.dim() - k; d < x.dim(); ++d) p.dims.push_back(d);
  }
  for (size_t i = 0; i < p.dims.size(); ++i) {
    if (s && (*s)[i] != -1)
      p.lens.push_back((*s)[i]);
    else
      p.lens.push_back(std::nullopt);
  }
  if (p.dims.empty()) ember::detail::throw_value(op, "expected at least one dim to transform");
  return p;
}

// x with each transformed dim fitted to its length (the last to `last` when given).
Tensor fit_all(const char* op, Tensor x, const Plan& p, std::optional<int64_t> last = {}) {
  for (size_t i = 0; i < p.dims.size(); ++i) {
    const int64_t d = p.dims[i];
    const int64_t n = i + 1 == p.dims.size() && last ? *last : p.lens[i].value_or(x.size(d));
    if (n < 1) ember::detail::throw_value(op, "invalid number of points " + std::to_string(n));
    x = detail::fit(x, n, d);
  }
  return x;
}

Shape leading(const Shape& dims) { return Shape(std::span<const int64_t>(dims.data(), dims.size() - 1)); }

void require_real(const char* op, const Tensor& x) {
  if (is_complex(x.dtype()))
    ember::detail::throw_dtype(op, "expected a real input, found " + std::string(dtype_name(x.dtype())));
}

// The output length of a c2r transform's last dim: s's, or 2 (size - 1).
int64_t c2r_points(const char* op, const Tensor& x, const Plan& p) {
  const int64_t n = p.lens.back().value_or(2 * (x.size(p.dims.back()) - 1));
  if (n < 1) ember::detail::throw_value(op, "invalid number of points " + std::to_string(n));
  return n;
}

Tensor c2c_nd(const char* op, const Tensor& x, const std::optional<Shape>& s,
              const std::optional<Shape>& dim, const std::string& norm, bool inverse) {
  const Plan p = plan_nd(op, x, s, dim);
  return detail::c2c(fit_all(op, detail::as_complex_input(x), p), p.dims,
                     detail::norm_mode(op, norm, !inverse), !inverse);
}

Tensor rfft_nd(const char* op, const Tensor& x, const std::optional<Shape>& s,
               const std::optional<Shape>& dim, const std::string& norm) {
  const Plan p = plan_nd(op, x, s, dim);
  require_real(op, x);
  return detail::r2c(fit_all(op, detail::as_real_input(x), p), p.dims, detail::norm_mode(op, norm, true),
                     true);
}

Tensor irfft_nd(const char* op, const Tensor& x, const std::optional<Shape>& s,
                const std::optional<Shape>& dim, const std::string& norm) {
  const Plan p = plan_nd(op, x, s, dim);
  const int64_t n = c2r_points(op, x, p);
  return detail::c2r(fit_all(op, detail::as_complex_input(x), p, n / 2 + 1), p.dims,
                     detail::norm_mode(op, norm, false), n);
}

// torch's hfftn: c2c over the leading dims, then c2r of the conjugate over the last.
Tensor hfft_nd(const char* op, const Tensor& x, const std::optional<Shape>& s,
               const std::optional<Shape>& dim, const std::string& norm) {
  const Plan p = plan_nd(op, x, s, dim);
  const int64_t n = c2r_points(op, x, p);
  const int mode = detail::norm_mode(op, norm, true);
  Tensor y = fit_all(op, detail::as_complex_input(x), p, n / 2 + 1);
  if (p.dims.size() > 1) y = detail::c2c(y, leading(p.dims), mode, true);
  return detail::c2r(conj(y), {p.dims.back()}, mode, n);
}

// torch's ihfftn: r2c over the last dim, conjugated, then the inverse c2c over the others.
Tensor ihfft_nd(const char* op, const Tensor& x, const std::optional<Shape>& s,
                const std::optional<Shape>& dim, const std::string& norm) {
  const Plan p = plan_nd(op, x, s, dim);
  require_real(op, x);
  const int mode = detail::norm_mode(op, norm, false);
  Tensor y = conj(detail::r2c(fit_all(op, detail::as_real_input(x), p), {p.dims.back()}, mode, true));
  if (p.dims.size() == 1) return y;
  return detail::c2c(y, leading(p.dims), mode, false);
}

Tensor shift(const Tensor& x, const std::optional<Shape>& dim, bool inverse) {
  Shape dims, shifts;
  if (dim) {
    for (int64_t d : *dim) dims.push_back(wrap_dim(d, x.dim(), inverse ? "ifftshift" : "fftshift"));
  } else {
    for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
  }
  if (dims.empty()) return x;
  for (int64_t d : dims) shifts.push_back(inverse ? (x.size(d) + 1) / 2 : x.size(d) / 2);
  return roll(x, shifts, dims);
}

Tensor freq(const char* op, int64_t n, double d, TensorOptions o, bool onesided) {
  if (n < 0) ember::detail::throw_value(op, "n must be non-negative, found " + std::to_string(n));
  const int64_t count = onesided ? n / 2 + 1 : n;
  std::vector<double> v(size_t(n ? count : 0));
  for (int64_t i = 0; i < int64_t(v.size()); ++i)
    v[size_t(i)] = double(onesided || i < (n + 1) / 2 ? i : i - n) / (d * double(n));
  return tensor(v, {int64_t(v.size())}, o.dtype.value_or(default_dtype()), o.device);
}

}  // namespace

Tensor fft2(const Tensor& x, std::optional<Shape> s, Shape dim, const std::string& norm) {
  return c2c_nd("fft2", x, s, dim, norm, false);
}
Tensor ifft2(const Tensor& x, std::optional<Shape> s, Shape dim, const std::string& norm) {
  return c2c_nd("ifft2", x, s, dim, norm, true);
}
Tensor fftn(const Tensor& x, std::optional<Shape> s, std::optional<Shape> dim,
            const std::string& norm) {
  return c2c_nd("fftn", x, s, dim, norm, false);
}
Tensor ifftn(const Tensor& x, std::optional<Shape> s, std::optional<Shape> dim,
             const std::string& norm) {
  return c2c_nd("ifftn", x, s, dim, norm, true);
}
Tensor rfft2(const Tensor& x, std::optional<Shape> s, Shape dim, const std::string& norm) {
  return rfft_nd("rfft2", x, s, dim, norm);
}
Tensor irfft2(const Tensor& x, std::optional<Shape> s, Shape dim, const std::string& norm) {
  return irfft_nd("irfft2", x, s, dim, norm);
}
Tensor rfftn(const Tensor& x, std::optional<Shape> s, std::optional<Shape> dim,
             const std::string& norm) {
  return rfft_nd("rfftn", x, s, dim, norm);
}
Tensor irfftn(const Tensor& x, std::optional<Shape> s, std::optional<Shape> dim,
              const std::string& norm) {
  return irfft_nd("irfftn", x, s, dim, norm);
}

Tensor hfft2(const Tensor& x, std::optional<Shape> s, Shape dim, const std::string& norm) {
  return hfft_nd("hfft2", x, s, dim, norm);
}
Tensor ihfft2(const Tensor& x, std::optional<Shape> s, Shape dim, const std::string& norm) {
  return ihfft_nd("ihfft2", x, s, dim, norm);
}
Tensor hfftn(const Tensor& x, std::optional<Shape> s, std::optional<Shape> dim,
             const std::string& norm) {
  return hfft_nd("hfftn", x, s, dim, norm);
}
Tensor ihfftn(const Tensor& x, std::optional<Shape> s, std::optional<Shape> dim,
              const std::string& norm) {
  return ihfft_nd("ihfftn", x, s, dim, norm);
}

Tensor fftfreq(int64_t n, double d, TensorOptions o) { return freq("fftfreq", n, d, o, false); }
Tensor rfftfreq(int64_t n, double d, TensorOptions o) { return freq("rfftfreq", n, d, o, true); }
Tensor fftshift(const Tensor& x, std::optional<Shape> dim) { return shift(x, dim, false); }
Tensor ifftshift(const Tensor& x, std::optional<Shape> dim) { return shift(x, dim, true); }

}  // namespace ember::fft

namespace ember {
namespace {

// A window of `length` points from w(k, N) with N the symmetric window's length (length + 1
// when periodic), computed in double.
template <class F>
Tensor window(const char* op, int64_t length, bool periodic, TensorOptions o, const F& w) {
  if (length < 0)
    ember::detail::throw_value(
        op, "window_length must be non-negative, found " + std::to_string(length));
  const DType dt = o.dtype.value_or(default_dtype());
  if (!is_floating(dt))
    ember::detail::throw_dtype(op,
                               "expected a floating dtype, found " + std::string(dtype_name(dt)));
  std::vector<double> v(size_t(length), 1.0);
  const int64_t n = periodic ? length + 1 : length;
  if (length > 1)
    for (int64_t k = 0; k < length; ++k) v[size_t(k)] = w(double(k), double(n - 1));
  return tensor(v, {length}, dt, o.device);
}

double cos_turn(double k, double m, double mult) {
  return std::cos(2 * std::numbers::pi * mult * k / m);
}

// The modified Bessel function of the first kind, order 0 (its power series converges fast
// for the betas windows use).
double bessel_i0(double x) {
  double sum = 1, term = 1;
  const double q = x * x / 4;
  for (int k = 1; k < 500; ++k) {
    term *= q / (double(k) * double(k));
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

}  // namespace

Tensor hann_window(int64_t window_length, bool periodic, TensorOptions o) {
  return window("hann_window", window_length, periodic, o,
                [](double k, double m) { return 0.5 - 0.5 * cos_turn(k, m, 1); });
}

Tensor hamming_window(int64_t window_length, bool periodic, double alpha, double beta,
                      TensorOptions o) {
  return window("hamming_window", window_length, periodic, o,
                [&](double k, double m) { return alpha - beta * cos_turn(k, m, 1); });
}

Tensor blackman_window(int64_t window_length, bool periodic, TensorOptions o) {
  return window("blackman_window", window_length, periodic, o, [](double k, double m) {
    return 0.42 - 0.5 * cos_turn(k, m, 1) + 0.08 * cos_turn(k, m, 2);
  });
}

Tensor kaiser_window(int64_t window_length, bool periodic, double beta, TensorOptions o) {
  const double i0b = bessel_i0(beta);
  return window("kaiser_window", window_length, periodic, o, [&](double k, double m) {
    const double r = 2 * k / m - 1;
    return bessel_i0(beta * std::sqrt(std::max(0.0, 1 - r * r))) / i0b;
  });
}

}  // namespace ember

// torch.fft's front ends. On a host device with nothing to record (no autodiff history, no
// deferred work) the transforms run natively: ember/backends/flex/fft_plan.h's mixed-radix
// Stockham and six-step plans, Bluestein for large prime factors, real transforms through
// half-length complex ones. Where a gradient is recorded, or on another device, they run as
// ember ops on complex tensors, which autodiff differentiates: Cooley-Tukey over a
// factorisation of the length (each stage one small complex matmul per radix plus a twiddle
// product), and Bluestein's chirp-z transform (a convolution of power-of-two length) for prime
// factors above kDirectMax. Tables are computed on the host in double precision.
#include "ember/fft.h"

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "ember/backends/flex/fft_plan.h"
#include "ember/complex.h"
#include "ember/ember.h"

namespace ember::fft {
namespace {

constexpr int64_t kDirectMax = 64;  // a radix up to this size is one DFT matrix product

enum class Norm { Backward, Ortho, Forward };

Norm parse_norm(const char* op, const std::string& s) {
  if (s == "backward" || s.empty()) return Norm::Backward;
  if (s == "ortho") return Norm::Ortho;
  if (s == "forward") return Norm::Forward;
  ember::detail::throw_value(
      op, "norm must be \"backward\", \"ortho\" or \"forward\", found \"" + s + "\"");
}

// A host table of e^(i angle) as a complex tensor of dtype `d` on `dev`.
Tensor table(const std::vector<double>& angle, const Shape& shape, DType d, Device dev) {
  std::vector<std::complex<double>> v(angle.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::polar(1.0, angle[i]);
  return tensor(v, shape, d, dev);
}

// The angle 2 pi a / n with a reduced mod n first (exact for large products).
double turn(int64_t a, int64_t n, double sign) {
  return sign * 2 * std::numbers::pi * double(a % n) / double(n);
}

int64_t radix_of(int64_t n) {
  // The largest divisor of n up to kDirectMax (fewer, larger stages); 1 when n is a prime
  // above it.
  for (int64_t r = std::min(n, kDirectMax); r > 1; --r)
    if (n % r == 0) return r;
  return 1;
}

Tensor dft_last(const Tensor& z, double sign);

// Direct: z @ W^T with W[k][j] = e^(sign 2 pi i j k / n).
Tensor direct(const Tensor& z, int64_t n, double sign) {
  std::vector<double> a(size_t(n * n));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < n; ++j) a[size_t(k * n + j)] = turn(j * k, n, sign);
  return matmul(z, table(a, {n, n}, z.dtype(), z.device()).transpose(0, 1));
}

// Bluestein: X[k] = w[k] sum_j (x[j] w[j]) conj(w[k - j]) with w[j] = e^(sign pi i j^2 / n),
// the sum a circular convolution of power-of-two length m >= 2n - 1.
Tensor bluestein(const Tensor& z, int64_t n, double sign) {
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)  // j^2 mod 2n keeps the angle exact for long signals
    w[size_t(j)] = sign * std::numbers::pi * double((j * j) % (2 * n)) / double(n);
  const DType d = z.dtype();
  const Device dev = z.device();
  Tensor chirp = table(w, {n}, d, dev);
  std::vector<double> bw(size_t(m), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    bw[size_t(j)] = -w[size_t(j)];
    if (j > 0) bw[size_t(m - j)] = -w[size_t(j)];
  }
  Tensor kernel = table(bw, {m}, d, dev);
  // positions m - n + 1 ... n - 1 hold no chirp value: zero them
  std::vector<double> keep(size_t(m), 0.0);
  for (int64_t j = 0; j < n; ++j) keep[size_t(j)] = keep[size_t((m - j) % m)] = 1.0;
  kernel = kernel * tensor(keep, {m}, complex_part_dtype(d), dev);
  Tensor a = pad(z * chirp, {0, m - n});
  Tensor conv = dft_last(dft_last(a, -1.0) * dft_last(kernel, -1.0), 1.0) / double(m);
  return narrow(conv, -1, 0, n) * chirp;
}

// The unnormalised DFT of complex `z` along its last dim (sign -1 forward, +1 inverse).
Tensor dft_last(const Tensor& z, double sign) {
  const int64_t n = z.size(-1);
  if (n <= 1) return z.contiguous();
  const int64_t r = radix_of(n);
  if (r == n) return direct(z, n, sign);
  if (r == 1) return bluestein(z, n, sign);
  // n = r * n2; x[n2 j1 + j2] -> X[k1 + r k2]: an r-point DFT over j1, twiddles, an n2-point
  // DFT over j2, and the output reordered.
  const int64_t n2 = n / r;
  Shape s = z.shape();
  Shape split(std::span<const int64_t>(s.data(), s.size() - 1));
  split.push_back(r);
  split.push_back(n2);
  Tensor x = z.reshape(split);  // [..., j1, j2]
  std::vector<double> wa(size_t(r * r)), ta(size_t(r * n2));
  for (int64_t k = 0; k < r; ++k)
    for (int64_t j = 0; j < r; ++j) wa[size_t(k * r + j)] = turn(j * k, r, sign);
  for (int64_t k1 = 0; k1 < r; ++k1)
    for (int64_t j2 = 0; j2 < n2; ++j2) ta[size_t(k1 * n2 + j2)] = turn(k1 * j2, n, sign);
  Tensor y = matmul(table(wa, {r, r}, z.dtype(), z.device()), x);  // [..., k1, j2]
  y = y * table(ta, {r, n2}, z.dtype(), z.device());
  Tensor out = dft_last(y, sign);           // [..., k1, k2]
  return out.transpose(-1, -2).reshape(s);  // k = k1 + r k2
}

// x as complex of the dtype torch.fft gives (f32 -> c64, f64 -> c128, ints -> the default).
Tensor as_complex_input(const Tensor& x) {
  if (is_complex(x.dtype())) return x;
  const DType f = is_floating(x.dtype()) && x.dtype() != DType::F16 && x.dtype() != DType::BF16
                      ? x.dtype()
                      : default_dtype();
  return x.to(complex_dtype_for(f));
}

// x along `dim` trimmed or zero-padded to n points.
Tensor fit(const Tensor& x, int64_t n, int64_t dim) {
  const int64_t have = x.size(dim);
  if (have == n) return x;
  if (have > n) return narrow(x, dim, 0, n);
  Shape p(size_t(2 * (x.dim() - dim)), 0);
  p[p.size() - 1] = n - have;
  return pad(x, p);
}

double scale(Norm norm, int64_t n, bool inverse) {
  if (norm == Norm::Ortho) return 1.0 / std::sqrt(double(n));
  if ((norm == Norm::Backward) == inverse) return 1.0 / double(n);
  return 1.0;
}

// Whether x's transform may run natively: on a host device with no gradient to record (a
// deferring device's pending input is written first when the kernel reads it).
bool native(const Tensor& x) {
  const Device d = x.device();
  return (d.backend() == Backend::Flex || d.backend() == Backend::Cpu) &&
         !(d.has_autodiff() && x.requires_grad());
}

// f(x with `dim` last) with the result's last dim moved back to `dim`.
template <class F>
Tensor along(const Tensor& x, int64_t dim, const F& f) {
  if (dim == x.dim() - 1) return f(x);
  return movedim(f(movedim(x, {dim}, {-1})), {-1}, {dim});
}

// The real dtype torch.fft computes a real input in (ints and halves -> the default dtype).
Tensor as_real_input(const Tensor& x) {
  const DType d = x.dtype() == DType::F32 || x.dtype() == DType::F64 ? x.dtype() : default_dtype();
  return x.dtype() == d ? x : x.to(d);
}

Tensor transform(const char* op, const Tensor& input, std::optional<int64_t> n, int64_t dim,
                 const std::string& norm, bool inverse) {
  if (!input.defined()) ember::detail::throw_value(op, "the input is undefined");
  if (input.dim() == 0) ember::detail::throw_shape(op, "expected a tensor of at least 1 dim");
  const Norm nm = parse_norm(op, norm);
  const int64_t d = wrap_dim(dim, input.dim(), op);
  const int64_t len = n.value_or(input.size(d));
  if (len < 1) ember::detail::throw_value(op, "invalid number of points " + std::to_string(len));
  Tensor x = fit(as_complex_input(input), len, d);
  const double s = scale(nm, len, inverse);
  if (native(x)) return along(x, d, [&](const Tensor& t) { return flex::fft::c2c(t, inverse, s); });
  Tensor y = dft_last(movedim(x, {d}, {-1}), inverse ? 1.0 : -1.0);
  if (s != 1.0) y = y * s;
  return movedim(y, {-1}, {d});
}

}  // namespace

Tensor fft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return transform("fft", x, n, dim, norm, false);
}
Tensor ifft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  return transform("ifft", x, n, dim, norm, true);
}

Tensor rfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  if (x.defined() && is_complex(x.dtype()))
    ember::detail::throw_dtype(
        "rfft", "expected a real input, found " + std::string(dtype_name(x.dtype())));
  if (x.defined() && x.dim() > 0 && native(x)) {
    const char* op = "rfft";
    const Norm nm = parse_norm(op, norm);
    const int64_t d = wrap_dim(dim, x.dim(), op);
    const int64_t len = n.value_or(x.size(d));
    if (len < 1) ember::detail::throw_value(op, "invalid number of points " + std::to_string(len));
    const double s = scale(nm, len, false);
    return along(fit(as_real_input(x), len, d), d,
                 [&](const Tensor& t) { return flex::fft::r2c(t, false, s); });
  }
  Tensor y = transform("rfft", x, n, dim, norm, false);
  const int64_t d = wrap_dim(dim, x.dim(), "rfft");
  return narrow(y, d, 0, y.size(d) / 2 + 1);
}

Tensor irfft(const Tensor& input, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  const char* op = "irfft";
  if (!input.defined()) ember::detail::throw_value(op, "the input is undefined");
  if (input.dim() == 0) ember::detail::throw_shape(op, "expected a tensor of at least 1 dim");
  const int64_t d = wrap_dim(dim, input.dim(), op);
  const int64_t len = n.value_or(2 * (input.size(d) - 1));
  if (len < 1) ember::detail::throw_value(op, "invalid number of points " + std::to_string(len));
  const int64_t h = len / 2 + 1;  // the frequencies read
  if (native(input)) {
    const double s = scale(parse_norm(op, norm), len, true);
    return along(fit(as_complex_input(input), h, d), d,
                 [&](const Tensor& t) { return flex::fft::c2r(t, len, true, s); });
  }
  Tensor x = movedim(fit(as_complex_input(input), h, d), {d}, {-1});
  // The full Hermitian spectrum: X[n - k] = conj(X[k]); the zero (and Nyquist) frequency's
  // imaginary part is dropped.
  const DType part = complex_part_dtype(x.dtype());
  std::vector<double> mask(size_t(h), 1.0);
  mask[0] = 0;
  if (len % 2 == 0) mask[size_t(h - 1)] = 0;
  Tensor re = real(x), im = imag(x) * tensor(mask, {h}, part, x.device());
  const int64_t tail = len - h;  // k = h .. len - 1 read X[len - k] = X[tail .. 1]
  if (tail > 0) {
    re = cat({re, flip(narrow(re, -1, 1, tail), {-1})}, -1);
    im = cat({im, neg(flip(narrow(im, -1, 1, tail), {-1}))}, -1);
  }
  Tensor y = real(dft_last(complex(re.contiguous(), im.contiguous()), 1.0));
  const double s = scale(parse_norm(op, norm), len, true);
  if (s != 1.0) y = y * s;
  return movedim(y, {-1}, {d});
}

namespace {
// The norm of the transform in the other direction ("backward" <-> "forward").
std::string dual(const char* op, const std::string& norm) {
  const Norm nm = parse_norm(op, norm);
  return nm == Norm::Ortho ? "ortho" : nm == Norm::Backward ? "forward" : "backward";
}
}  // namespace

Tensor hfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  if (!x.defined()) ember::detail::throw_value("hfft", "the input is undefined");
  return irfft(conj(as_complex_input(x)), n, dim, dual("hfft", norm));
}

Tensor ihfft(const Tensor& x, std::optional<int64_t> n, int64_t dim, const std::string& norm) {
  if (x.defined() && is_complex(x.dtype()))
    ember::detail::throw_dtype(
        "ihfft", "expected a real input, found " + std::string(dtype_name(x.dtype())));
  return conj(rfft(x, n, dim, dual("ihfft", norm)));
}

}  // namespace ember::fft

// Spectral ONNX ops (opset 17): DFT, STFT and MelWeightMatrix. ember has no complex dtype, so a
// complex signal is its real and imaginary parts (ONNX's trailing dim of 2) and a DFT is two
// real matmuls with cosine and sine matrices built on the host from the lengths alone; the
// products run in float64 (the sums of long signals lose too much in float32) on the graph's
// device. MelWeightMatrix is a constant of its (host) sizes.
#include <cmath>
#include <numbers>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

// The DFT along the last dim of (re, im) [..., n] (im may be undefined: a real signal), giving
// `bins` outputs ([..., bins] each), in float64.
std::pair<Tensor, Tensor> dft_last(const Tensor& re, const Tensor& im, int64_t bins, bool inverse) {
  const int64_t n = re.size(-1);
  std::vector<double> c(size_t(n * bins)), s(size_t(n * bins));
  const double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / double(n) : 1.0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < bins; ++k) {
      // j*k mod n keeps the angle small, so long transforms stay exact at the grid points.
      double angle = 2 * std::numbers::pi * double((j * k) % n) / double(n);
      c[size_t(j * bins + k)] = std::cos(angle) * scale;
      s[size_t(j * bins + k)] = sign * std::sin(angle) * scale;
    }
  Tensor C = tensor(c, {n, bins}, kF64, re.device()), S = tensor(s, {n, bins}, kF64, re.device());
  Tensor r = re.to(kF64);
  if (!im.defined()) return {matmul(r, C), matmul(r, S)};
  Tensor i = im.to(kF64);
  return {sub(matmul(r, C), matmul(i, S)), add(matmul(i, C), matmul(r, S))};
}

// x [..., 1 or 2] split into its real and imaginary parts (undefined for a real signal).
std::pair<Tensor, Tensor> parts(const Node& n, const Tensor& x) {
  int64_t c = x.size(-1);
  if (c != 1 && c != 2)
    invalid(n, "the last dim must be 1 (real) or 2 (complex), got " + std::to_string(c));
  return {x.select(-1, 0), c == 2 ? x.select(-1, 1) : Tensor()};
}

TensorList dft(const OpArgs& a) {
  const Tensor& x = a[0];
  auto [re, im] = parts(a.node, x);
  int64_t axis = a.node.i("axis", 1);
  if (axis < 0) axis += x.dim();
  if (axis < 0 || axis >= x.dim() - 1) invalid(a.node, "axis out of range");
  bool inverse = a.node.i("inverse", 0) != 0, onesided = a.node.i("onesided", 0) != 0;
  if (inverse && onesided) unsupported(a.node, "an inverse one-sided DFT");
  re = transpose(re, axis, -1);
  if (im.defined()) im = transpose(im, axis, -1);
  // dft_length pads with zeros or truncates.
  int64_t n = a.has(1) ? host_ints(a[1])[0] : re.size(-1);
  auto fit = [&](const Tensor& t) {
    if (!t.defined() || t.size(-1) == n) return t;
    if (t.size(-1) > n) return t.slice(-1, 0, n);
    return pad(t, Shape{0, n - t.size(-1)}, "constant", 0.0);
  };
  auto [yr, yi] = dft_last(fit(re), fit(im), onesided ? n / 2 + 1 : n, inverse);
  Tensor y = stack({transpose(yr, axis, -1), transpose(yi, axis, -1)}, -1);
  return {y.to(x.dtype())};
}

TensorList stft(const OpArgs& a) {
  const Tensor& x = a[0];
  if (x.dim() != 3) invalid(a.node, "signal must be [batch, length, 1 or 2]");
  auto [re, im] = parts(a.node, x);
  int64_t step = host_ints(a[1])[0];
  int64_t len = a.has(3) ? host_ints(a[3])[0] : a.has(2) ? a[2].numel() : 0;
  if (len <= 0 || step <= 0 || len > re.size(1))
    invalid(a.node,
            "needs a frame_length or window no longer than the signal, and a frame_step > 0");
  if (a.has(2) && a[2].numel() != len) invalid(a.node, "the window's length is not frame_length");
  bool onesided = a.node.i("onesided", 1) != 0;
  int64_t frames = (re.size(1) - len) / step + 1;
  // Frame f is signal[f*step : f*step + len]: one gather of every frame's positions.
  Tensor pos =
      add(mul(arange(frames, {.dtype = kI64, .device = x.device()}).reshape({frames, 1}), step),
          arange(len, {.dtype = kI64, .device = x.device()}).reshape({1, len}));
  auto framed = [&](const Tensor& t) {
    if (!t.defined()) return t;
    Tensor f = index_select(t, 1, pos.reshape({-1})).reshape({t.size(0), frames, len});
    return a.has(2) ? mul(f, a[2].to(f.dtype())) : f;
  };
  auto [yr, yi] = dft_last(framed(re), framed(im), onesided ? len / 2 + 1 : len, false);
  return {stack({yr, yi}, -1).to(x.dtype())};
}

// ONNX's reference: triangles between mel-spaced points mapped to spectrogram bins.
TensorList mel_weight_matrix(const OpArgs& a) {
  int64_t mels = host_ints(a[0])[0], dft_length = host_ints(a[1])[0], rate = host_ints(a[2])[0];
  double lo = host_doubles(a[3])[0], hi = host_doubles(a[4])[0];
  if (mels <= 0 || dft_length <= 0 || rate <= 0) invalid(a.node, "sizes must be positive");
  const int64_t bins = dft_length / 2 + 1;
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  double lo_mel = mel(lo), step = (mel(hi) - lo_mel) / double(mels + 2);
  std::vector<int64_t> f(size_t(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (double(i) * step + lo_mel) / 2595) - 1);
    f[size_t(i)] = int64_t(std::floor(double(dft_length + 1) * hz / double(rate)));
  }
  std::vector<double> w(size_t(bins * mels), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= bins) invalid(a.node, "a mel edge falls outside the spectrogram's bins");
    return w[size_t(j * mels + i)];
  };
  for (int64_t i = 0; i < mels; ++i) {
    int64_t l = f[size_t(i)], c = f[size_t(i + 1)], h = f[size_t(i + 2)];
    if (c == l)
      at(c, i) = 1;
    else
      for (int64_t j = l; j <= c; ++j) at(j, i) = double(j - l) / double(c - l);
    for (int64_t j = c; j < h; ++j) at(j, i) = double(h - j) / double(h - c);
  }
  auto dtype = dtype_of(int32_t(a.node.i("output_datatype", 1)));
  if (!dtype) unsupported(a.node, "output_datatype");
  return {tensor(w, {bins, mels}, *dtype, a.device)};
}

}  // namespace

void add_spectral_ops(OpTable& t) {
  t["DFT"] = dft;
  t["STFT"] = stft;
  t["MelWeightMatrix"] = mel_weight_matrix;
}

}  // namespace ember::onnx::detail

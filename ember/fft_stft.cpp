// torch.stft / torch.istft (1.13 semantics) in ember ops over ember::fft's transforms: frames
// gathered by index, windowed and transformed; the inverse overlap-adds the windowed frames
// (index_add) and divides by the summed squared window. Autodiff differentiates both.
#include <vector>

#include "ember/ember.h"
#include "ember/fft.h"

namespace ember {
namespace {

// The window as n_fft points: ones by default, a shorter one zero-padded on both sides.
Tensor full_window(const char* op, const Tensor& window, int64_t n_fft, int64_t win_length, DType d,
                   Device dev) {
  if (win_length < 1 || win_length > n_fft)
    ember::detail::throw_value(op, "expected 0 < win_length <= n_fft, found win_length " +
                                       std::to_string(win_length) + " and n_fft " +
                                       std::to_string(n_fft));
  Tensor w = window.defined() ? window : ones({win_length}, {.dtype = d, .device = dev});
  if (w.dim() != 1 || w.size(0) != win_length)
    ember::detail::throw_shape(op, "expected a 1-D window of win_length " +
                                       std::to_string(win_length) + " points, found shape " +
                                       shape_str(w.shape()));
  const int64_t left = (n_fft - win_length) / 2;
  if (left || win_length < n_fft) w = pad(w, {left, n_fft - win_length - left});
  return w;
}

// Indices t * hop + k of `frames` frames of n points, flattened.
Tensor frame_index(int64_t frames, int64_t n, int64_t hop, Device dev) {
  std::vector<int64_t> idx(size_t(frames * n));
  for (int64_t t = 0; t < frames; ++t)
    for (int64_t k = 0; k < n; ++k) idx[size_t(t * n + k)] = t * hop + k;
  return tensor(idx, {frames * n}, DType::I64, dev);
}

}  // namespace

Tensor stft(const Tensor& input, int64_t n_fft, const StftOptions& o) {
  const char* op = "stft";
  if (!input.defined()) ember::detail::throw_value(op, "the input is undefined");
  if (input.dim() != 1 && input.dim() != 2)
    ember::detail::throw_shape(
        op, "expected a 1-D or 2-D (batch, time) input, found shape " + shape_str(input.shape()));
  if (n_fft < 1)
    ember::detail::throw_value(op, "n_fft must be positive, found " + std::to_string(n_fft));
  const int64_t hop = o.hop_length.value_or(n_fft / 4), win = o.win_length.value_or(n_fft);
  if (hop < 1)
    ember::detail::throw_value(op, "hop_length must be positive, found " + std::to_string(hop));
  Tensor x = input.dim() == 1 ? input.unsqueeze(0) : input;
  const bool cplx = is_complex(x.dtype()) || (o.window.defined() && is_complex(o.window.dtype()));
  const bool onesided = o.onesided.value_or(!cplx);
  if (onesided && cplx)
    ember::detail::throw_value(op, "a onesided transform needs a real input and window");
  if (o.center) {
    const int64_t p = n_fft / 2;
    x = pad(x.unsqueeze(1), {p, p}, o.pad_mode).squeeze(1);
  }
  const int64_t len = x.size(-1);
  if (n_fft > len)
    ember::detail::throw_value(op, "expected 0 < n_fft <= " + std::to_string(len) +
                                       " (the padded length), found n_fft " +
                                       std::to_string(n_fft));
  const int64_t frames = 1 + (len - n_fft) / hop;
  const DType real_t = complex_part_dtype(x.dtype());
  Tensor w = full_window(op, o.window, n_fft, win, real_t, x.device());
  Tensor f = index_select(x, 1, frame_index(frames, n_fft, hop, x.device()))
                 .reshape({x.size(0), frames, n_fft}) *
             w;
  const std::string norm = o.normalized ? "ortho" : "backward";
  Tensor y = onesided ? fft::rfft(f, {}, -1, norm) : fft::fft(f, {}, -1, norm);
  y = y.transpose(1, 2);
  if (input.dim() == 1) y = y.squeeze(0);
  return o.return_complex ? y : view_as_real(y);  // torch 1.13's real form: [..., 2]
}

Tensor istft(const Tensor& input, int64_t n_fft, const IstftOptions& o) {
  const char* op = "istft";
  if (!input.defined()) ember::detail::throw_value(op, "the input is undefined");
  if (!is_complex(input.dtype()))
    ember::detail::throw_dtype(
        op, "expected a complex input, found " + std::string(dtype_name(input.dtype())));
  if (input.dim() != 2 && input.dim() != 3)
    ember::detail::throw_shape(op,
                               "expected a 2-D (freq, frames) or 3-D (batch, freq, frames) "
                               "input, found shape " +
                                   shape_str(input.shape()));
  const int64_t hop = o.hop_length.value_or(n_fft / 4), win = o.win_length.value_or(n_fft);
  Tensor x = input.dim() == 2 ? input.unsqueeze(0) : input;
  const int64_t freqs = x.size(1), frames = x.size(2);
  const bool onesided = o.onesided.value_or(freqs != n_fft);
  if (onesided ? freqs != n_fft / 2 + 1 : freqs != n_fft)
    ember::detail::throw_shape(op, "expected " + std::to_string(onesided ? n_fft / 2 + 1 : n_fft) +
                                       " frequencies for n_fft " + std::to_string(n_fft) +
                                       ", found " + std::to_string(freqs));
  const DType real_t = complex_part_dtype(x.dtype());
  Tensor w = full_window(op, o.window, n_fft, win, real_t, x.device());
  const std::string norm = o.normalized ? "ortho" : "backward";
  Tensor f = x.transpose(1, 2);  // [batch, frames, freq]
  f = onesided ? fft::irfft(f, n_fft, -1, norm) : real(fft::ifft(f, n_fft, -1, norm));
  f = f * w;
  const int64_t total = n_fft + hop * (frames - 1);
  Tensor idx = frame_index(frames, n_fft, hop, x.device());
  Tensor y = index_add(zeros({x.size(0), total}, {.dtype = real_t, .device = x.device()}), 1, idx,
                       f.reshape({x.size(0), frames * n_fft}));
  Tensor env = index_add(zeros({total}, {.dtype = real_t, .device = x.device()}), 0, idx,
                         (w * w).expand({frames, n_fft}).reshape({frames * n_fft}));
  const int64_t start = o.center ? n_fft / 2 : 0;
  int64_t end = o.length ? start + *o.length : (o.center ? total - n_fft / 2 : total);
  const int64_t stop = std::min(end, total);
  y = narrow(y, 1, start, stop - start);
  env = narrow(env, 0, start, stop - start);
  if (abs(env).min().item<double>() < 1e-11)
    ember::detail::throw_value(op,
                               "window overlap add min below 1e-11: the window and hop do "
                               "not satisfy the nonzero overlap-add condition");
  y = y / env;
  if (end > total) y = pad(y, {0, end - total});
  return input.dim() == 2 ? y.squeeze(0) : y;
}

}  // namespace ember

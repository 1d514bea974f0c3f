// Pooling that ember's pool ops do not cover, composed from slices: N-d max and average pooling
// (ONNX's 3-d case; ember pools 1-d and 2-d) as an elementwise max or sum over the kernel's
// taps, each tap a strided slice of the padded input; and MaxUnpool as a scatter into zeros.
#include <limits>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {

Tensor pool_by_taps(const Tensor& x, const PoolGeometry& g, bool is_max, bool count_include_pad) {
  const size_t s = g.kernel.size();
  std::vector<int64_t> out(s), end = g.end;
  for (size_t k = 0; k < s; ++k) {
    int64_t in = x.size(int64_t(k) + 2), span = (g.kernel[k] - 1) * g.dilations[k] + 1;
    int64_t room = in + g.begin[k] + g.end[k] - span;
    out[k] = (g.ceil_mode ? (room + g.strides[k] - 1) / g.strides[k] : room / g.strides[k]) + 1;
    // A last window starting in the end padding is dropped (torch's and ONNX's rule).
    if (g.ceil_mode && (out[k] - 1) * g.strides[k] >= in + g.begin[k]) --out[k];
    end[k] +=
        std::max<int64_t>(0, (out[k] - 1) * g.strides[k] + span - (in + g.begin[k] + g.end[k]));
  }
  auto padded = [&](const Tensor& t, double value, double extra) {
    Shape p, q;
    for (size_t k = s; k-- > 0;) {
      p.push_back(g.begin[k]);
      p.push_back(g.end[k]);
      q.push_back(0);
      q.push_back(end[k] - g.end[k]);
    }
    return pad(pad(t, p, "constant", value), q, "constant", extra);
  };
  auto taps = [&](const Tensor& xp, bool take_max) {
    Tensor acc;
    std::vector<int64_t> tap(s, 0);
    for (;;) {
      Tensor v = xp;
      for (size_t k = 0; k < s; ++k) {
        int64_t start = tap[k] * g.dilations[k];
        v = v.slice(int64_t(k) + 2, start, start + (out[k] - 1) * g.strides[k] + 1, g.strides[k]);
      }
      acc = !acc.defined() ? v : take_max ? maximum(acc, v) : add(acc, v);
      size_t k = 0;
      while (k < s && ++tap[k] == g.kernel[k]) tap[k++] = 0;
      if (k == s) return acc;
    }
  };
  if (is_max) {
    const double lowest = -std::numeric_limits<double>::infinity();
    return taps(padded(x, lowest, lowest), true);
  }
  Tensor sum = taps(padded(x, 0.0, 0.0), false);
  // The divisor counts the cells each window covers: real ones, and the pads when they count
  // (never the extra cells ceil_mode adds).
  Tensor cells = padded(ones_like(x.slice(1, 0, 1)), count_include_pad ? 1.0 : 0.0, 0.0);
  return div(sum, taps(cells, false));
}

namespace {

TensorList max_unpool(const OpArgs& a) {
  const Tensor& x = a[0];
  const size_t s = size_t(x.dim() - 2);
  auto kernel = a.node.ints("kernel_shape");
  auto strides = a.node.ints("strides", std::vector<int64_t>(s, 1));
  auto pads = a.node.ints("pads", std::vector<int64_t>(2 * s, 0));
  if (kernel.size() != s || strides.size() != s || pads.size() != 2 * s)
    invalid(a.node, "kernel_shape, strides or pads have the wrong length");
  std::vector<int64_t> shape = {x.size(0), x.size(1)};
  for (size_t k = 0; k < s; ++k)
    shape.push_back((x.size(int64_t(k) + 2) - 1) * strides[k] + kernel[k] - pads[k] - pads[s + k]);
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  // ONNX's indices (MaxPool's second output) count within the whole unpooled tensor.
  Tensor flat = zeros({total}, {.dtype = x.dtype(), .device = x.device()});
  Tensor y =
      scatter(flat, 0, a[1].to(kI64).reshape({-1}), x.reshape({-1})).reshape(to_shape(shape));
  if (!a.has(2)) return {y};
  // A larger output_shape extends the unpooled tensor at the end of each spatial dim.
  auto want = host_ints(a[2]);
  if (want.size() != s + 2) invalid(a.node, "output_shape must have the input's rank");
  Shape p;
  for (size_t k = s; k-- > 0;) {
    if (want[k + 2] < shape[k + 2])
      invalid(a.node, "output_shape is smaller than the unpooled size");
    p.push_back(0);
    p.push_back(want[k + 2] - shape[k + 2]);
  }
  return {pad(y, p, "constant", 0.0)};
}

}  // namespace

void add_pool_ops(OpTable& t) { t["MaxUnpool"] = max_unpool; }

}  // namespace ember::onnx::detail

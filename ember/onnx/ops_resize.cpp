// Resize (opsets 10-17) and Upsample (7-9). ONNX's resize is separable: each resized axis maps
// every output index to a few input indices with weights that depend only on the sizes and the
// node's attributes, so they are computed on the host and applied as ember ops: index_select
// for nearest, a [out, in] weight matrix contracted with the axis (matmul) for linear and cubic.
// The index maths follows ONNX's reference (onnx/backend/test/case/node/resize.py): the taps
// are the n points nearest the source coordinate on the edge-padded axis.
#include <cmath>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

struct ResizeAttrs {
  std::string mode = "nearest";         // nearest | linear | cubic
  std::string transform = "half_pixel";  // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
};

// The source coordinate of output index x along an axis (ONNX's coordinate transforms);
// `scale` is out/in as the node gives it, `roi` the axis's [start, end] (tf_crop_and_resize).
double source_coord(const ResizeAttrs& r, double x, int64_t in, int64_t out, double scale,
                    double roi_start, double roi_end) {
  const double out_width = scale * double(in);  // the reference uses the unrounded width
  const std::string& t = r.transform;
  if (t == "align_corners") return out_width == 1 ? 0.0 : x * double(in - 1) / (out_width - 1);
  if (t == "asymmetric") return x / scale;
  if (t == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (t == "pytorch_half_pixel") return out_width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (t == "tf_crop_and_resize") {
    double span = (roi_end - roi_start) * double(in - 1);
    double c = out == 1 ? span / 2 : x * span / (out_width - 1);
    return c + roi_start * double(in - 1);
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

// Weights of the taps for a ratio in (0, 1] past the left tap.
std::vector<double> coeffs(const ResizeAttrs& r, double ratio, bool integral) {
  if (r.mode == "nearest") {
    if (integral) return {0, 1};
    const std::string& m = r.nearest;
    if (m == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (m == "floor") return {1, 0};
    if (m == "ceil") return {0, 1};
    return {double(ratio <= 0.5), double(ratio > 0.5)};  // round_prefer_floor
  }
  if (r.mode == "linear") return {1 - ratio, ratio};
  const double A = r.cubic_a, s = ratio, t = 1 - ratio;
  return {((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A,
          ((A + 2) * s - (A + 3)) * s * s + 1, ((A + 2) * t - (A + 3)) * t * t + 1,
          ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A};
}

// The [out, in] weight matrix of one axis (row-major), and which rows fall outside the input
// (tf_crop_and_resize: they take the extrapolation value).
struct AxisWeights {
  std::vector<double> w;
  std::vector<uint8_t> outside;
  bool any_outside = false;
};

AxisWeights axis_weights(const ResizeAttrs& r, int64_t in, int64_t out, double scale,
                         double roi_start, double roi_end) {
  AxisWeights a;
  a.w.assign(size_t(out * in), 0.0);
  a.outside.assign(size_t(out), 0);
  for (int64_t o = 0; o < out; ++o) {
    double x = source_coord(r, double(o), in, out, scale, roi_start, roi_end);
    if (r.transform == "tf_crop_and_resize" && (x < 0 || x > double(in - 1))) {
      a.outside[size_t(o)] = 1;
      a.any_outside = true;
      continue;
    }
    const bool integral = x == std::floor(x);
    // The left tap: floor(x), or x - 1 when x is a whole number (the ratio is then 1).
    const int64_t left = integral ? int64_t(x) - 1 : int64_t(std::floor(x));
    const double ratio = x - double(left);
    std::vector<double> c = coeffs(r, ratio, integral);
    const int64_t n = int64_t(c.size()), first = left - (n / 2 - 1);
    if (r.exclude_outside) {
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (first + j < 0 || first + j >= in) c[size_t(j)] = 0;
        sum += c[size_t(j)];
      }
      if (sum != 0)
        for (double& v : c) v /= sum;
    }
    for (int64_t j = 0; j < n; ++j) {
      int64_t i = std::clamp<int64_t>(first + j, 0, in - 1);
      a.w[size_t(o * in + i)] += c[size_t(j)];
    }
  }
  return a;
}

// Resizes x to `out` dims, axis by axis. `scales` are out/in per axis as the coordinate
// transform uses them; `roi` is [starts..., ends...] or empty.
Tensor resize_nd(const Node& n, Tensor x, const ResizeAttrs& r, const std::vector<int64_t>& out,
                 const std::vector<double>& scales, const std::vector<double>& roi) {
  const int64_t rank = x.dim();
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t in = x.size(d), o = out[size_t(d)];
    const double roi_start = roi.empty() ? 0 : roi[size_t(d)];
    const double roi_end = roi.empty() ? 1 : roi[size_t(rank + d)];
    const bool trivial = in == o && r.transform != "tf_crop_and_resize" &&
                         (roi.empty() || (roi_start == 0 && roi_end == 1));
    if (trivial && scales[size_t(d)] == 1.0) continue;
    if (in == 0 || o == 0) invalid(n, "cannot resize an empty axis");
    AxisWeights a = axis_weights(r, in, o, scales[size_t(d)], roi_start, roi_end);
    if (r.mode == "nearest" && !a.any_outside) {
      // One-hot rows: a gather keeps every dtype exact.
      std::vector<int64_t> src(static_cast<size_t>(o));
      for (int64_t k = 0; k < o; ++k)
        for (int64_t i = 0; i < in; ++i)
          if (a.w[size_t(k * in + i)] != 0) src[size_t(k)] = i;
      x = index_select(x, d, tensor(src, {o}, kI64, x.device()));
      continue;
    }
    if (!is_floating(x.dtype())) unsupported(n, "linear or cubic resize of an integer tensor");
    // Contract the axis with W^T: move it last, [.., in] x [in, out], move it back.
    Tensor w = tensor(a.w, {o, in}, x.dtype(), x.device());
    Tensor y = matmul(movedim(x, Shape{d}, Shape{rank - 1}), w.t());
    if (a.any_outside) {
      std::vector<uint8_t> m = a.outside;
      Tensor mask = tensor(m, {o}, kBool, x.device());
      y = masked_fill(y, mask, Scalar(r.extrapolation));
    }
    x = movedim(y, Shape{rank - 1}, Shape{d});
  }
  return x;
}

TensorList resize(const OpArgs& a) {
  const Node& n = a.node;
  Tensor x = a[0];
  const int64_t rank = x.dim();
  ResizeAttrs r;
  r.mode = n.s("mode", "nearest");
  if (r.mode != "nearest" && r.mode != "linear" && r.mode != "cubic")
    invalid(n, "mode '" + r.mode + "': expected nearest, linear or cubic");
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (n.opset < 11) {
    // Resize-10 is Upsample's maths: asymmetric coordinates, nearest rounds down.
    r.transform = "asymmetric";
    r.nearest = "floor";
    scales = host_doubles(a[1]);
  } else {
    r.transform = n.s("coordinate_transformation_mode", "half_pixel");
    r.nearest = n.s("nearest_mode", "round_prefer_floor");
    r.cubic_a = n.f("cubic_coeff_a", -0.75);
    r.exclude_outside = n.i("exclude_outside", 0) != 0;
    r.extrapolation = n.f("extrapolation_value", 0.0);
    if (a.has(1) && a.in[1].numel() > 0) roi = host_doubles(a.in[1]);
    if (a.has(2) && a.in[2].numel() > 0) scales = host_doubles(a.in[2]);
    if (a.has(3) && a.in[3].numel() > 0) sizes = host_ints(a.in[3]);
    if (scales.empty() == sizes.empty()) invalid(n, "exactly one of scales and sizes is needed");
  }
  if (r.mode == "cubic" && n.opset < 11) invalid(n, "cubic mode needs opset 11");
  if (!roi.empty() && int64_t(roi.size()) != 2 * rank)
    invalid(n, "roi holds " + std::to_string(roi.size()) + " values, expected " +
                   std::to_string(2 * rank));
  std::vector<int64_t> out(static_cast<size_t>(rank));
  if (!sizes.empty()) {
    if (int64_t(sizes.size()) != rank)
      invalid(n, "sizes holds " + std::to_string(sizes.size()) + " values for rank " +
                     std::to_string(rank));
    out = sizes;
    scales.resize(size_t(rank));
    for (int64_t d = 0; d < rank; ++d) scales[size_t(d)] = double(out[size_t(d)]) / double(x.size(d));
  } else {
    if (int64_t(scales.size()) != rank)
      invalid(n, "scales holds " + std::to_string(scales.size()) + " values for rank " +
                     std::to_string(rank));
    for (int64_t d = 0; d < rank; ++d) {
      if (!(scales[size_t(d)] > 0)) invalid(n, "scales must be positive");
      out[size_t(d)] = int64_t(std::floor(double(x.size(d)) * scales[size_t(d)]));
    }
  }
  return {resize_nd(n, x, r, out, scales, roi)};
}

// Upsample (opsets 7-9): asymmetric coordinates; nearest rounds down; out = floor(in * scale).
TensorList upsample(const OpArgs& a) {
  const Node& n = a.node;
  Tensor x = a[0];
  ResizeAttrs r;
  r.mode = n.s("mode", "nearest");
  if (r.mode == "bilinear") r.mode = "linear";
  if (r.mode != "nearest" && r.mode != "linear")
    invalid(n, "mode '" + r.mode + "': expected nearest or linear");
  r.transform = "asymmetric";
  r.nearest = "floor";
  std::vector<double> scales = n.opset >= 9 ? host_doubles(a[1]) : n.floats("scales");
  if (int64_t(scales.size()) != x.dim()) invalid(n, "one scale per dim is needed");
  std::vector<int64_t> out;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!(scales[size_t(d)] > 0)) invalid(n, "scales must be positive");
    out.push_back(int64_t(std::floor(double(x.size(d)) * scales[size_t(d)])));
  }
  return {resize_nd(n, x, r, out, scales, {})};
}

}  // namespace

void add_resize_ops(OpTable& t) {
  t["Resize"] = resize;
  t["Upsample"] = upsample;
}

}  // namespace ember::onnx::detail

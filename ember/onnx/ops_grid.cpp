// GridSample and RoiAlign, bilinear sampling. GridSample (opset 16, 4-D): the grid's normalized
// coordinates become source positions, the padding mode folds them (border, reflection) or masks
// taps outside the input (zeros), and each tap is a gather from the flattened image weighted
// elementwise: every step is an ember op on the graph's device. The maths is torch's grid_sampler,
// which ONNX's reference follows.
#include <algorithm>
#include <cmath>

#include "ember/onnx/ops.h"
#include "ember/vision/boxes.h"

namespace ember::onnx::detail {
namespace {

struct GridArgs {
  std::string mode, padding;
  bool align = false;
};

// Normalized [-1, 1] to a pixel position along an axis of `size`.
Tensor unnormalize(const Tensor& g, int64_t size, bool align) {
  if (align) return mul(add(g, Scalar(1.0)), Scalar(double(size - 1) / 2));
  return div(sub(mul(add(g, Scalar(1.0)), Scalar(double(size))), Scalar(1.0)), Scalar(2.0));
}

// torch's reflect_coordinates over [low/2, high/2], then clipped into the input.
Tensor reflect(const Tensor& x, int64_t size, bool align) {
  const double low = align ? 0 : -1, high = align ? 2.0 * double(size - 1) : 2.0 * double(size) - 1;
  if (low == high) return zeros_like(x);
  const double lo = low / 2, span = (high - low) / 2;
  Tensor in = abs(sub(x, Scalar(lo)));
  Tensor extra = fmod(in, Scalar(span));
  Tensor flips = floor(div(in, Scalar(span)));
  Tensor even = eq(fmod(flips, Scalar(2.0)), Scalar(0.0));
  Tensor r = where(even, add(extra, Scalar(lo)), add(sub(Scalar(span), extra), Scalar(lo)));
  return clamp(r, Scalar(0.0), Scalar(double(size - 1)));
}

Tensor source(const Tensor& g, int64_t size, const GridArgs& o) {
  Tensor x = unnormalize(g, size, o.align);
  if (o.padding == "border") return clamp(x, Scalar(0.0), Scalar(double(size - 1)));
  if (o.padding == "reflection") return reflect(x, size, o.align);
  return x;
}

// x [N, C, H*W] gathered at integer positions (iy, ix) [N, P] (float), zero outside the image.
Tensor tap(const Tensor& flat, const Tensor& iy, const Tensor& ix, int64_t H, int64_t W) {
  Tensor inside = logical_and(logical_and(ge(ix, Scalar(0.0)), le(ix, Scalar(double(W - 1)))),
                              logical_and(ge(iy, Scalar(0.0)), le(iy, Scalar(double(H - 1)))));
  Tensor cx = clamp(ix, Scalar(0.0), Scalar(double(W - 1)));
  Tensor cy = clamp(iy, Scalar(0.0), Scalar(double(H - 1)));
  Tensor idx = add(mul(cy, Scalar(double(W))), cx).to(kI64);  // [N, P]
  const int64_t N = flat.size(0), C = flat.size(1);
  idx = expand(unsqueeze(idx, 1), {N, C, idx.size(1)});
  Tensor v = gather(flat, 2, idx);
  return where(unsqueeze(inside, 1), v, Scalar(0.0));
}

Tensor rsub(const Tensor& t) { return sub(Scalar(1.0), t); }

// The cubic convolution weight of tap k (0..3) for a fraction t, as ember ops (A = -0.75).
Tensor cubic_w(const Tensor& t, int k) {
  constexpr double A = -0.75;
  auto c1 = [&](const Tensor& x) {  // ((A + 2) x - (A + 3)) x^2 + 1
    return add(mul(sub(mul(x, Scalar(A + 2)), Scalar(A + 3)), mul(x, x)), Scalar(1.0));
  };
  auto c2 = [&](const Tensor& x) {  // ((A x - 5A) x + 8A) x - 4A
    return sub(mul(add(mul(sub(mul(x, Scalar(A)), Scalar(5 * A)), x), Scalar(8 * A)), x),
               Scalar(4 * A));
  };
  if (k == 0) return c2(add(t, Scalar(1.0)));
  if (k == 1) return c1(t);
  if (k == 2) return c1(rsub(t));
  return c2(sub(Scalar(2.0), t));
}

TensorList grid_sample(const OpArgs& a) {
  const Node& n = a.node;
  Tensor x = a[0], grid = a[1];
  GridArgs o{n.s("mode", "bilinear"), n.s("padding_mode", "zeros"), n.i("align_corners", 0) != 0};
  if (o.mode != "bilinear" && o.mode != "nearest" && o.mode != "bicubic")
    invalid(n, "mode '" + o.mode + "': expected bilinear, nearest or bicubic");
  if (o.padding != "zeros" && o.padding != "border" && o.padding != "reflection")
    invalid(n, "padding_mode '" + o.padding + "': expected zeros, border or reflection");
  if (x.dim() != 4 || grid.dim() != 4 || grid.size(3) != 2 || grid.size(0) != x.size(0))
    invalid(n, "expected X [N, C, H, W] and grid [N, H_out, W_out, 2]");
  if (!is_floating(x.dtype())) unsupported(n, "integer inputs");
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t Ho = grid.size(1), Wo = grid.size(2);
  Tensor g = reshape(grid.to(x.dtype()), {N, Ho * Wo, 2});
  Tensor gx = select(g, 2, 0), gy = select(g, 2, 1);
  Tensor flat = reshape(x, {N, C, H * W});
  Tensor y;
  if (o.mode == "nearest") {
    y = tap(flat, round(source(gy, H, o)), round(source(gx, W, o)), H, W);
  } else if (o.mode == "bilinear") {
    Tensor sx = source(gx, W, o), sy = source(gy, H, o);
    Tensor x0 = floor(sx), y0 = floor(sy);
    Tensor tx = unsqueeze(sub(sx, x0), 1), ty = unsqueeze(sub(sy, y0), 1);
    Tensor x1 = add(x0, Scalar(1.0)), y1 = add(y0, Scalar(1.0));
    Tensor top = add(mul(tap(flat, y0, x0, H, W), rsub(tx)), mul(tap(flat, y0, x1, H, W), tx));
    Tensor bot = add(mul(tap(flat, y1, x0, H, W), rsub(tx)), mul(tap(flat, y1, x1, H, W), tx));
    y = add(mul(top, rsub(ty)), mul(bot, ty));
  } else {
    // Bicubic: 4x4 taps around the unpadded position; padding applies to each tap.
    Tensor sx = unnormalize(gx, W, o.align), sy = unnormalize(gy, H, o.align);
    Tensor x0 = floor(sx), y0 = floor(sy);
    Tensor tx = sub(sx, x0), ty = sub(sy, y0);
    const TensorOptions to{.dtype = x.dtype(), .device = x.device()};
    auto pad = [&](const Tensor& c, int64_t size) {
      if (o.padding == "border") return clamp(c, Scalar(0.0), Scalar(double(size - 1)));
      if (o.padding == "reflection") return reflect(c, size, o.align);
      return c;
    };
    y = zeros({N, C, Ho * Wo}, to);
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        Tensor wt = unsqueeze(mul(cubic_w(tx, i), cubic_w(ty, j)), 1);
        Tensor iy = pad(add(y0, Scalar(double(j - 1))), H), ix = pad(add(x0, Scalar(double(i - 1))), W);
        y = add(y, mul(tap(flat, iy, ix, H, W), wt));
      }
  }
  return {reshape(y, {N, C, Ho, Wo})};
}

// RoiAlign (avg mode) is ember::vision::roi_align with the batch indices as the rois' first
// column: half_pixel is torchvision's aligned=True, output_half_pixel (opset < 16's default)
// aligned=False, which keeps rois at least one pixel wide.
TensorList roi_align(const OpArgs& a) {
  const Tensor& x = a[0];
  if (x.dim() != 4) invalid(a.node, "X must be [N, C, H, W]");
  if (a.node.s("mode", "avg") != "avg") unsupported(a.node, "mode 'max'");
  const Tensor& rois = a[1];
  const Tensor& batch = a[2];
  if (rois.dim() != 2 || rois.size(1) != 4 || batch.dim() != 1 || batch.size(0) != rois.size(0))
    invalid(a.node, "rois must be [num_rois, 4], one per batch index");
  vision::RoiAlignOptions o;
  o.output_size = {a.node.i("output_height", 1), a.node.i("output_width", 1)};
  o.sampling_ratio = a.node.i("sampling_ratio", 0);
  o.spatial_scale = a.node.f("spatial_scale", 1.0);
  o.aligned = a.node.s("coordinate_transformation_mode",
                       a.node.opset >= 16 ? "half_pixel" : "output_half_pixel") == "half_pixel";
  const Tensor r = cat({batch.to(x.dtype()).unsqueeze(1), rois.to(x.dtype())}, 1);
  try {
    return {vision::roi_align(x, r, o)};
  } catch (const IndexError& e) {
    invalid(a.node, e.what());
  }
}

}  // namespace

void add_grid_ops(OpTable& t) {
  t["GridSample"] = grid_sample;
  t["RoiAlign"] = roi_align;
}

}  // namespace ember::onnx::detail

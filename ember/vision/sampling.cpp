// grid_sample as gathers from the flattened image: each output point reads 1 (nearest), 4
// (bilinear) or 16 (bicubic) taps, whose flat indices and weights are computed on the device
// from the grid, with torch's coordinate maths (grid_sampler_compute_source_index).
#include "ember/vision/sampling.h"

#include "ember/ember.h"

namespace ember::vision {
namespace {

enum class Pad { Zeros, Border, Reflection };

// torch's reflect_coordinates: reflects `x` into [low, high] given as twice their values.
Tensor reflect(const Tensor& x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return zeros_like(x);
  const double lo = double(twice_low) / 2, span = double(twice_high - twice_low) / 2;
  Tensor a = abs(x - lo);
  Tensor extra = fmod(a, span), flips = floor(a / span);
  return where(fmod(flips, 2.0) == 0.0, extra + lo, span - extra + lo);
}

// The padding mode applied to an unnormalised coordinate (compute_coordinates).
Tensor pad_coord(const Tensor& x, int64_t size, Pad pad, bool align) {
  if (pad == Pad::Zeros) return x;
  Tensor c = x;
  if (pad == Pad::Reflection)
    c = align ? reflect(c, 0, 2 * (size - 1)) : reflect(c, -1, 2 * size - 1);
  return clamp(c, 0.0, double(size - 1));
}

Tensor unnormalize(const Tensor& g, int64_t size, bool align) {
  return align ? (g + 1.0) / 2.0 * double(size - 1) : ((g + 1.0) * double(size) - 1.0) / 2.0;
}

struct Sampler {
  Tensor flat;  // [N, C, H * W]
  int64_t n, c, h, w, points;
  Pad pad;
  bool align;
  // The taps at integer coordinates (ix, iy) [N, P] weighted by wt [N, P]; out-of-image taps
  // read 0 (after the padding mode moved them, for bicubic).
  Tensor tap(const Tensor& ix, const Tensor& iy, const Tensor& wt, bool pad_taps) const {
    Tensor x = ix, y = iy;
    if (pad_taps) x = pad_coord(x, w, pad, align), y = pad_coord(y, h, pad, align);
    Tensor inside = (x >= 0.0) & (x <= double(w - 1)) & (y >= 0.0) & (y <= double(h - 1));
    Tensor idx = (clamp(y, 0.0, double(h - 1)) * double(w) + clamp(x, 0.0, double(w - 1))).to(kI64);
    Tensor v = gather(flat, 2, idx.unsqueeze(1).expand({n, c, points}));
    return v * where(inside, wt, 0.0).unsqueeze(1);
  }
};

Tensor cubic1(const Tensor& t) { return ((1.25 * t - 2.25) * t) * t + 1.0; }  // A = -0.75
Tensor cubic2(const Tensor& t) { return ((-0.75 * t + 3.75) * t - 6.0) * t + 3.0; }

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleOptions& o) {
  const char* op = "grid_sample";
  EMBER_CHECK(input.dim() == 4, ShapeError, op,
              "expected input [N, C, H, W], found shape " + shape_str(input.shape()));
  EMBER_CHECK(grid.dim() == 4 && grid.size(3) == 2 && grid.size(0) == input.size(0), ShapeError, op,
              "expected grid [" + std::to_string(input.size(0)) + ", Ho, Wo, 2], found shape " +
                  shape_str(grid.shape()));
  EMBER_CHECK(is_floating(input.dtype()) && is_floating(grid.dtype()), DTypeError, op,
              "expected floating-point input and grid, found " +
                  std::string(dtype_name(input.dtype())) + " and " +
                  std::string(dtype_name(grid.dtype())));
  Pad pad;
  if (o.padding_mode == "zeros")
    pad = Pad::Zeros;
  else if (o.padding_mode == "border")
    pad = Pad::Border;
  else if (o.padding_mode == "reflection")
    pad = Pad::Reflection;
  else
    throw ValueError("[grid_sample] expected padding_mode zeros, border or reflection, found '" +
                     o.padding_mode + "'");
  EMBER_CHECK(o.mode == "bilinear" || o.mode == "nearest" || o.mode == "bicubic", ValueError, op,
              "expected mode bilinear, nearest or bicubic, found '" + o.mode + "'");
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  const int64_t ho = grid.size(1), wo = grid.size(2);
  Sampler s{input.reshape({n, c, h * w}), n, c, h, w, ho * wo, pad, o.align_corners};
  Tensor g = grid.to(input.dtype()).reshape({n, ho * wo, 2});
  Tensor gx = unnormalize(g.select(2, 0), w, o.align_corners);
  Tensor gy = unnormalize(g.select(2, 1), h, o.align_corners);
  Tensor out;
  if (o.mode == "bicubic") {
    Tensor x0 = floor(gx), y0 = floor(gy), tx = gx - x0, ty = gy - y0;
    Tensor wx[4] = {cubic2(tx + 1.0), cubic1(tx), cubic1(1.0 - tx), cubic2(2.0 - tx)};
    Tensor wy[4] = {cubic2(ty + 1.0), cubic1(ty), cubic1(1.0 - ty), cubic2(2.0 - ty)};
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i) {
        Tensor t = s.tap(x0 + double(i - 1), y0 + double(j - 1), wx[i] * wy[j], true);
        out = out.defined() ? out + t : t;
      }
  } else {
    gx = pad_coord(gx, w, pad, o.align_corners), gy = pad_coord(gy, h, pad, o.align_corners);
    if (o.mode == "nearest") {
      out = s.tap(round(gx), round(gy), ones_like(gx), false);
    } else {
      Tensor x0 = floor(gx), y0 = floor(gy), x1 = x0 + 1.0, y1 = y0 + 1.0;
      Tensor ex = gx - x0, ey = gy - y0, fx = 1.0 - ex, fy = 1.0 - ey;
      out = s.tap(x0, y0, fx * fy, false) + s.tap(x1, y0, ex * fy, false) +
            s.tap(x0, y1, fx * ey, false) + s.tap(x1, y1, ex * ey, false);
    }
  }
  return out.reshape({n, c, ho, wo});
}

Tensor affine_grid(const Tensor& theta, const Shape& size, bool align_corners) {
  const char* op = "affine_grid";
  EMBER_CHECK(size.size() == 4, ShapeError, op,
              "expected size [N, C, H, W], found " + shape_str(size));
  EMBER_CHECK(
      theta.dim() == 3 && theta.size(0) == size[0] && theta.size(1) == 2 && theta.size(2) == 3,
      ShapeError, op,
      "expected theta [" + std::to_string(size[0]) + ", 2, 3], found shape " +
          shape_str(theta.shape()));
  EMBER_CHECK(is_floating(theta.dtype()), DTypeError, op, "expected a floating-point theta");
  const int64_t h = size[2], w = size[3];
  auto base = [&](int64_t k) {
    Tensor l = linspace(-1.0, 1.0, k, TensorOptions{theta.dtype(), theta.device()});
    return align_corners || k <= 1 ? (k <= 1 ? zeros_like(l) : l) : l * (double(k - 1) / double(k));
  };
  Tensor xs = base(w).reshape({1, w}).expand({h, w}), ys = base(h).reshape({h, 1}).expand({h, w});
  Tensor grid = stack({xs, ys, ones_like(xs)}, -1).reshape({1, h * w, 3});
  return matmul(grid, theta.transpose(1, 2)).reshape({size[0], h, w, 2});
}

}  // namespace ember::vision

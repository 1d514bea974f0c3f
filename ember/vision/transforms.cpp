// Geometric transforms with torchvision's maths: resize (antialiased as torch's
// _upsample_*_aa: separable taps gathered and weighted on the device), crops, flips, padding,
// and rotation / affine maps through grid_sample. Parameters (taps, grids, matrices) are
// computed on the host from sizes alone; no image data is read there.
#include "ember/vision/transforms.h"

#include <cmath>
#include <numbers>

#include "ember/ember.h"
#include "ember/vision/detail/transforms_batched.h"
#include "ember/vision/sampling.h"

namespace ember::vision {
namespace detail {

Batched batched(const Tensor& img, const char* op) {
  EMBER_CHECK(img.defined(), ValueError, op, "expected an image tensor, found an undefined one");
  EMBER_CHECK(img.dim() >= 2, ShapeError, op,
              "expected [..., C, H, W] or [H, W], found shape " + shape_str(img.shape()));
  Batched b{img, img.shape()};
  const int64_t h = img.size(-2), w = img.size(-1), c = img.dim() >= 3 ? img.size(-3) : 1;
  b.x = img.reshape({-1, c, h, w});
  return b;
}

Tensor Batched::restore(const Tensor& y) const {
  Shape s = shape;
  s[s.size() - 2] = y.size(2), s[s.size() - 1] = y.size(3);
  if (s.size() >= 3) s[s.size() - 3] = y.size(1);
  return y.reshape(s);
}

Tensor to_compute(const Tensor& x) { return is_floating(x.dtype()) ? x : x.to(kF32); }

Tensor from_compute(const Tensor& y, DType dtype, bool clamp_u8) {
  if (is_floating(dtype)) return y.dtype() == dtype ? y : y.to(dtype);
  Tensor r = round(y);
  if (clamp_u8 && dtype == kU8) r = clamp(r, 0.0, 255.0);
  return r.to(dtype);
}

}  // namespace detail

namespace {
using detail::batched;

struct Taps {
  int64_t k = 0;
  std::vector<int64_t> idx;
  std::vector<float> wt;
};

float aa_filter(float x, bool cubic) {
  x = std::abs(x);
  if (!cubic) return x < 1.f ? 1.f - x : 0.f;
  constexpr float a = -0.5f;
  if (x < 1.f) return ((a + 2.f) * x - (a + 3.f)) * x * x + 1.f;
  if (x < 2.f) return (((x - 5.f) * x + 8.f) * x - 4.f) * a;
  return 0.f;
}

// torch's _compute_indices_weights_aa (UpSampleKernel.cpp), in float as it computes for f32.
Taps aa_taps(int64_t in, int64_t out, bool cubic) {
  const float scale = float(in) / float(out);
  const float interp = cubic ? 4.f : 2.f;
  const float support = scale >= 1.f ? interp * 0.5f * scale : interp * 0.5f;
  const float invscale = scale >= 1.f ? 1.f / scale : 1.f;
  Taps t;
  t.k = int64_t(std::ceil(support)) * 2 + 1;
  t.idx.resize(size_t(out * t.k));
  t.wt.assign(size_t(out * t.k), 0.f);
  for (int64_t i = 0; i < out; ++i) {
    const float center = float(scale * (double(i) + 0.5));
    const int64_t xmin = std::max<int64_t>(int64_t(double(center) - double(support) + 0.5), 0);
    const int64_t xsize =
        std::min<int64_t>(int64_t(double(center) + double(support) + 0.5), in) - xmin;
    float total = 0;
    float* w = &t.wt[size_t(i * t.k)];
    for (int64_t j = 0; j < xsize && j < t.k; ++j) {
      w[j] = aa_filter(float((double(j + xmin) - double(center) + 0.5) * double(invscale)), cubic);
      total += w[j];
    }
    for (int64_t j = 0; j < t.k; ++j) {
      if (total != 0.f && j < xsize) w[j] /= total;
      t.idx[size_t(i * t.k + j)] =
          std::min(xmin + std::min(j, std::max<int64_t>(xsize - 1, 0)), in - 1);
    }
  }
  return t;
}

// One separable pass: x [B, C, H, W] resampled along dim 2 or 3 with `t`. Up to a few thousand
// input pixels each block of 32 outputs is one matmul with a dense [32, span] matrix of its
// taps, over the span of inputs they read (matmul is the fastest form on every backend; blocks
// keep it from multiplying by the zeros outside the band). Beyond, taps are gathered.
Tensor resample(const Tensor& x, int64_t dim, const Taps& t, int64_t out) {
  const int64_t in = x.size(dim);
  if (in <= 4096) {
    constexpr int64_t kBlock = 32;
    TensorList parts;
    for (int64_t o0 = 0; o0 < out; o0 += kBlock) {
      const int64_t n = std::min(kBlock, out - o0);
      int64_t lo = in, hi = 0;
      for (int64_t i = o0 * t.k; i < (o0 + n) * t.k; ++i)
        lo = std::min(lo, t.idx[size_t(i)]), hi = std::max(hi, t.idx[size_t(i)] + 1);
      const int64_t span = hi - lo;
      // Laid out as the matmul reads it: [n, span] for rows, [span, n] for columns.
      std::vector<float> m(size_t(n * span), 0.f);
      for (int64_t o = 0; o < n; ++o)
        for (int64_t j = 0; j < t.k; ++j) {
          const size_t i = size_t((o0 + o) * t.k + j);
          const int64_t src = t.idx[i] - lo;
          m[size_t(dim == 3 ? src * n + o : o * span + src)] += t.wt[i];
        }
      Tensor part = x.narrow(dim, lo, span);
      parts.push_back(dim == 3 ? matmul(part, tensor(m, {span, n}, x.dtype(), x.device()))
                               : matmul(tensor(m, {n, span}, x.dtype(), x.device()), part));
    }
    return parts.size() == 1 ? parts[0] : cat(parts, dim);
  }
  Tensor idx = tensor(t.idx, {int64_t(t.idx.size())}, kI64, x.device());
  Tensor g = index_select(x, dim, idx);
  Shape s = x.shape();
  if (dim == 3) {
    Tensor wt = tensor(t.wt, {out, t.k}, x.dtype(), x.device());
    return sum(g.reshape({s[0], s[1], s[2], out, t.k}) * wt, {-1});
  }
  Tensor wt = tensor(t.wt, {out, t.k, 1}, x.dtype(), x.device());
  return sum(g.reshape({s[0], s[1], out, t.k, s[3]}) * wt, {-2});
}

// torchvision's inverse affine matrix (_get_inverse_affine_matrix).
std::array<double, 6> inverse_affine(std::pair<double, double> center, double angle,
                                     std::pair<double, double> translate, double scale,
                                     std::pair<double, double> shear) {
  const double d2r = std::numbers::pi / 180.0;
  const double rot = angle * d2r, sx = shear.first * d2r, sy = shear.second * d2r;
  const auto [cx, cy] = center;
  const auto [tx, ty] = translate;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m = {d, -b, 0.0, -c, a, 0.0};
  for (double& v : m) v /= scale;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx, m[5] += cy;
  return m;
}

// torchvision's _gen_affine_grid, in float: [1, oh, ow, 2].
Tensor affine_sampling_grid(const std::array<double, 6>& m, int64_t w, int64_t h, int64_t ow,
                            int64_t oh, Device dev) {
  std::vector<float> g(size_t(oh * ow * 2));
  const float t[6] = {float(m[0]) / (0.5f * float(w)), float(m[1]) / (0.5f * float(w)),
                      float(m[2]) / (0.5f * float(w)), float(m[3]) / (0.5f * float(h)),
                      float(m[4]) / (0.5f * float(h)), float(m[5]) / (0.5f * float(h))};
  auto lin = [](int64_t n, int64_t i) {  // torch.linspace(-n/2 + 0.5, n/2 - 0.5, n)
    const float a = float(-double(n) * 0.5 + 0.5), b = float(double(n) * 0.5 + 0.5 - 1);
    if (n == 1) return a;
    const float step = (b - a) / float(n - 1);
    return i < n / 2 ? a + step * float(i) : b - step * float(n - 1 - i);
  };
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x) {
      const float bx = lin(ow, x), by = lin(oh, y);
      g[size_t((y * ow + x) * 2)] = bx * t[0] + by * t[1] + t[2];
      g[size_t((y * ow + x) * 2 + 1)] = bx * t[3] + by * t[4] + t[5];
    }
  return tensor(g, {1, oh, ow, 2}, kF32, dev);
}

// torchvision's _apply_grid_transform on x [B, C, H, W] (compute dtype).
Tensor grid_transform(const Tensor& x, const Tensor& grid, Interpolation interp,
                      const std::optional<std::vector<double>>& fill, const char* op) {
  EMBER_CHECK(interp != Interpolation::Bicubic, ValueError, op,
              "expected nearest or bilinear interpolation");
  const int64_t n = x.size(0), c = x.size(1);
  Tensor g = grid.to(x.dtype()).expand({n, grid.size(1), grid.size(2), 2});
  Tensor in = fill ? cat({x, ones({n, 1, x.size(2), x.size(3)}, x.options())}, 1) : x;
  const std::string mode = interp == Interpolation::Nearest ? "nearest" : "bilinear";
  Tensor out = grid_sample(in, g, {.mode = mode, .padding_mode = "zeros", .align_corners = false});
  if (!fill) return out;
  EMBER_CHECK(fill->size() == 1 || int64_t(fill->size()) == c, ValueError, op,
              "expected fill with 1 or " + std::to_string(c) + " values, found " +
                  std::to_string(fill->size()));
  Tensor mask = out.narrow(1, c, 1);
  out = out.narrow(1, 0, c);
  std::vector<double> f = *fill;
  Tensor fill_img = tensor(f, {1, int64_t(f.size()), 1, 1}, x.dtype(), x.device());
  if (interp == Interpolation::Nearest) return where(mask < 0.5, fill_img, out);
  return out * mask + (1.0 - mask) * fill_img;
}

std::vector<int64_t> pad_indices(int64_t n, int64_t before, int64_t after, PadMode mode) {
  std::vector<int64_t> idx;
  for (int64_t q = 0; q < n + before + after; ++q) {
    int64_t i = q - before;
    if (mode == PadMode::Edge) {
      i = std::clamp<int64_t>(i, 0, n - 1);
    } else {  // reflect (period 2n - 2, edge not repeated) or symmetric (period 2n)
      const int64_t period = mode == PadMode::Reflect ? std::max<int64_t>(2 * n - 2, 1) : 2 * n;
      i = ((i % period) + period) % period;
      if (i >= n) i = mode == PadMode::Reflect ? period - i : period - 1 - i;
    }
    idx.push_back(i);
  }
  return idx;
}

}  // namespace

Shape resize_output_size(int64_t h, int64_t w, const Shape& size, std::optional<int64_t> max_size) {
  EMBER_CHECK(size.size() == 1 || size.size() == 2, ValueError, "resize",
              "expected size {h, w} or {shorter side}, found " + shape_str(size));
  for (int64_t s : size)
    EMBER_CHECK(s > 0, ValueError, "resize", "expected positive sizes, found " + shape_str(size));
  if (size.size() == 2) return size;
  const int64_t short_side = std::min(h, w), long_side = std::max(h, w);
  int64_t new_short = size[0],
          new_long = int64_t(double(size[0]) * double(long_side) / double(short_side));
  if (max_size) {
    EMBER_CHECK(*max_size > size[0], ValueError, "resize",
                "max_size " + std::to_string(*max_size) + " must exceed the requested size " +
                    std::to_string(size[0]));
    if (new_long > *max_size)
      new_short = int64_t(double(*max_size) * double(new_short) / double(new_long)),
      new_long = *max_size;
  }
  return w <= h ? Shape{new_long, new_short} : Shape{new_short, new_long};
}

Tensor resize(const Tensor& img, const Shape& size, const ResizeOptions& o) {
  auto b = batched(img, "resize");
  const int64_t h = b.x.size(2), w = b.x.size(3);
  const Shape out = resize_output_size(h, w, size, o.max_size);
  if (out[0] == h && out[1] == w) return img;
  Tensor x = detail::to_compute(b.x), y;
  const bool cubic = o.interpolation == Interpolation::Bicubic;
  if (o.interpolation == Interpolation::Nearest) {
    y = interpolate(x, {.size = out, .scale_factor = {}, .mode = "nearest"});
  } else if (!o.antialias) {
    y = interpolate(x, {.size = out,
                        .scale_factor = {},
                        .mode = cubic ? "bicubic" : "bilinear",
                        .align_corners = false});
  } else {
    // Both orders give the same values; the one that shrinks first costs less.
    auto pass_w = [&](const Tensor& t) {
      return out[1] == w ? t : resample(t, 3, aa_taps(w, out[1], cubic), out[1]);
    };
    auto pass_h = [&](const Tensor& t) {
      return out[0] == h ? t : resample(t, 2, aa_taps(h, out[0], cubic), out[0]);
    };
    const double w_first =
        double(h) * double(w) * double(out[1]) + double(out[0]) * double(h) * double(out[1]);
    const double h_first =
        double(out[0]) * double(h) * double(w) + double(out[0]) * double(w) * double(out[1]);
    y = w_first <= h_first ? pass_h(pass_w(x)) : pass_w(pass_h(x));
  }
  return b.restore(detail::from_compute(y, img.dtype(), cubic));
}

Tensor crop(const Tensor& img, int64_t top, int64_t left, int64_t height, int64_t width) {
  auto b = batched(img, "crop");
  EMBER_CHECK(height > 0 && width > 0, ValueError, "crop",
              "expected a positive height and width, found " + std::to_string(height) + " and " +
                  std::to_string(width));
  const int64_t h = b.x.size(2), w = b.x.size(3), bottom = top + height, right = left + width;
  const int64_t t0 = std::clamp<int64_t>(top, 0, h), l0 = std::clamp<int64_t>(left, 0, w);
  Tensor y = b.x.narrow(2, t0, std::clamp<int64_t>(bottom, t0, h) - t0)
                 .narrow(3, l0, std::clamp<int64_t>(right, l0, w) - l0);
  if (top < 0 || left < 0 || bottom > h || right > w) {
    const int64_t pt = t0 - top, pl = l0 - left;
    y = ember::pad(y, {pl, width - pl - y.size(3), pt, height - pt - y.size(2)}, "constant", 0.0);
  }
  return b.restore(y);
}

Tensor center_crop(const Tensor& img, const Shape& size) {
  EMBER_CHECK(size.size() == 1 || size.size() == 2, ValueError, "center_crop",
              "expected size {h, w} or {s}, found " + shape_str(size));
  const int64_t ch = size[0], cw = size.size() == 2 ? size[1] : size[0];
  const int64_t h = img.size(-2), w = img.size(-1);
  // Offsets round half to even, as Python's round(); a larger crop pads first, as torchvision.
  const int64_t pl = cw > w ? (cw - w) / 2 : 0, pt = ch > h ? (ch - h) / 2 : 0;
  const int64_t ph = std::max(h, ch), pw = std::max(w, cw);
  const int64_t top = int64_t(std::nearbyint(double(ph - ch) / 2.0)) - pt;
  const int64_t left = int64_t(std::nearbyint(double(pw - cw) / 2.0)) - pl;
  return crop(img, top, left, ch, cw);
}

Tensor resized_crop(const Tensor& img, int64_t top, int64_t left, int64_t height, int64_t width,
                    const Shape& size, const ResizeOptions& o) {
  return resize(crop(img, top, left, height, width), size, o);
}

Tensor hflip(const Tensor& img) { return flip(batched(img, "hflip").x, {3}).reshape(img.shape()); }
Tensor vflip(const Tensor& img) { return flip(batched(img, "vflip").x, {2}).reshape(img.shape()); }

Tensor pad(const Tensor& img, const Shape& padding, double fill, PadMode mode) {
  auto b = batched(img, "pad");
  EMBER_CHECK(padding.size() == 1 || padding.size() == 2 || padding.size() == 4, ValueError, "pad",
              "expected 1, 2 or 4 padding values, found " + shape_str(padding));
  int64_t l = padding[0], t = padding[0], r = padding[0], bo = padding[0];
  if (padding.size() == 2) t = bo = padding[1], r = padding[0];
  if (padding.size() == 4) t = padding[1], r = padding[2], bo = padding[3];
  if (mode == PadMode::Constant) return b.restore(ember::pad(b.x, {l, r, t, bo}, "constant", fill));
  const int64_t h = b.x.size(2), w = b.x.size(3);
  if (mode == PadMode::Reflect)
    EMBER_CHECK(std::max({l, r}) < w && std::max({t, bo}) < h, ValueError, "pad",
                "reflect padding must be smaller than the image, found padding " +
                    shape_str(padding) + " for " + std::to_string(h) + "x" + std::to_string(w));
  auto rows = pad_indices(h, t, bo, mode), cols = pad_indices(w, l, r, mode);
  Tensor y = index_select(b.x, 2, tensor(rows, {int64_t(rows.size())}, kI64, img.device()));
  y = index_select(y, 3, tensor(cols, {int64_t(cols.size())}, kI64, img.device()));
  return b.restore(y);
}

Tensor rotate(const Tensor& img, double angle, bool expand, const AffineOptions& o) {
  auto b = batched(img, "rotate");
  const int64_t h = b.x.size(2), w = b.x.size(3);
  std::pair<double, double> c{0.0, 0.0};
  if (o.center) c = {o.center->first - double(w) * 0.5, o.center->second - double(h) * 0.5};
  const auto m = inverse_affine(c, -angle, {0.0, 0.0}, 1.0, {0.0, 0.0});
  int64_t ow = w, oh = h;
  if (expand) {  // torchvision's _compute_affine_output_size, in float
    const float hw = 0.5f * float(w), hh = 0.5f * float(h);
    const float px[4] = {-hw, -hw, hw, hw}, py[4] = {-hh, hh, hh, -hh};
    float lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (int k = 0; k < 4; ++k) {
      const float v[2] = {px[k] * float(m[0]) + py[k] * float(m[1]) + float(m[2]),
                          px[k] * float(m[3]) + py[k] * float(m[4]) + float(m[5])};
      for (int d = 0; d < 2; ++d) lo[d] = std::min(lo[d], v[d]), hi[d] = std::max(hi[d], v[d]);
    }
    const float half[2] = {hw, hh};
    int64_t sz[2];
    for (int d = 0; d < 2; ++d) {
      const float tol = 1e-4f;
      const float cmax = std::ceil(std::trunc((hi[d] + half[d]) / tol) * tol);
      const float cmin = std::floor(std::trunc((lo[d] + half[d]) / tol) * tol);
      sz[d] = int64_t(cmax - cmin);
    }
    ow = sz[0], oh = sz[1];
  }
  Tensor grid = affine_sampling_grid(m, w, h, ow, oh, img.device());
  Tensor y = grid_transform(detail::to_compute(b.x), grid, o.interpolation, o.fill, "rotate");
  return b.restore(detail::from_compute(y, img.dtype(), false));
}

Tensor affine(const Tensor& img, double angle, std::pair<double, double> translate, double scale,
              std::pair<double, double> shear, const AffineOptions& o) {
  auto b = batched(img, "affine");
  EMBER_CHECK(scale > 0, ValueError, "affine",
              "expected a positive scale, found " + std::to_string(scale));
  const int64_t h = b.x.size(2), w = b.x.size(3);
  std::pair<double, double> c{0.0, 0.0};
  if (o.center) c = {o.center->first - double(w) * 0.5, o.center->second - double(h) * 0.5};
  const auto m = inverse_affine(c, angle, translate, scale, shear);
  Tensor grid = affine_sampling_grid(m, w, h, w, h, img.device());
  Tensor y = grid_transform(detail::to_compute(b.x), grid, o.interpolation, o.fill, "affine");
  return b.restore(detail::from_compute(y, img.dtype(), false));
}

}  // namespace ember::vision

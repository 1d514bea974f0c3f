// Colour, blur, normalisation and erasing with torchvision's maths (functional_tensor.py):
// blends clamp and truncate back to u8 as `.to(uint8)` does there, hue goes through HSV in f32,
// the blur rounds.
#include <cmath>

#include "ember/ember.h"
#include "ember/vision/detail/transforms_batched.h"
#include "ember/vision/transforms.h"

namespace ember::vision {
namespace {

double bound_of(DType d) { return is_floating(d) ? 1.0 : 255.0; }

void check_channels(const Tensor& img, const char* op, bool gray_ok) {
  EMBER_CHECK(img.defined() && img.dim() >= 3, ShapeError, op,
              "expected [..., C, H, W], found " +
                  (img.defined() ? shape_str(img.shape()) : std::string("an undefined tensor")));
  const int64_t c = img.size(-3);
  EMBER_CHECK(c == 3 || (gray_ok && c == 1), ShapeError, op,
              std::string("expected ") + (gray_ok ? "1 or 3" : "3") + " channels, found shape " +
                  shape_str(img.shape()));
}

// torchvision's _blend: ratio * a + (1 - ratio) * b, clamped, converted back (truncating).
Tensor blend(const Tensor& a, const Tensor& b, double ratio) {
  Tensor y = clamp(ratio * detail::to_compute(a) + (1.0 - ratio) * detail::to_compute(b), 0.0,
                   bound_of(a.dtype()));
  return y.to(a.dtype());
}

Tensor rgb_to_hsv(const Tensor& img) {
  Tensor r = img.select(-3, 0), g = img.select(-3, 1), b = img.select(-3, 2);
  Tensor maxc = amax(img, {-3}), minc = amin(img, {-3});
  Tensor eqc = maxc == minc, cr = maxc - minc, one = ones_like(maxc);
  Tensor s = cr / where(eqc, one, maxc);
  Tensor div = where(eqc, one, cr);
  Tensor rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
  Tensor is_r = maxc == r, is_g = (maxc == g) & (maxc != r), is_b = (maxc != g) & (maxc != r);
  Tensor h =
      where(is_r, bc - gc, 0.0) + where(is_g, 2.0 + rc - bc, 0.0) + where(is_b, 4.0 + gc - rc, 0.0);
  h = fmod(h / 6.0 + 1.0, 1.0);
  return stack({h, s, maxc}, -3);
}

Tensor hsv_to_rgb(const Tensor& img) {
  Tensor h = img.select(-3, 0), s = img.select(-3, 1), v = img.select(-3, 2);
  Tensor i = floor(h * 6.0), f = h * 6.0 - i;
  Tensor p = clamp(v * (1.0 - s), 0.0, 1.0);
  Tensor q = clamp(v * (1.0 - s * f), 0.0, 1.0);
  Tensor t = clamp(v * (1.0 - s * (1.0 - f)), 0.0, 1.0);
  Tensor k = remainder(i.to(kI32), 6);
  // Sector k picks (r, g, b) from these rows, as torchvision's one-hot einsum does.
  const Tensor* table[6][3] = {{&v, &t, &p}, {&q, &v, &p}, {&p, &v, &t},
                               {&p, &q, &v}, {&t, &p, &v}, {&v, &p, &q}};
  TensorList rgb;
  for (int ch = 0; ch < 3; ++ch) {
    Tensor out = *table[5][ch];
    for (int sector = 4; sector >= 0; --sector) out = where(k == sector, *table[sector][ch], out);
    rgb.push_back(out);
  }
  return stack(rgb, -3);
}

std::vector<float> gaussian_kernel(int64_t size, double sigma) {
  std::vector<float> k(static_cast<size_t>(size));
  const float half = float(size - 1) * 0.5f;
  float total = 0;
  for (int64_t i = 0; i < size; ++i) {
    // torch.linspace(-half, half, size), then exp(-0.5 (x / sigma)^2), normalised.
    const float step = size > 1 ? (2 * half) / float(size - 1) : 0.f;
    const float x = i < size / 2 ? -half + step * float(i) : half - step * float(size - 1 - i);
    const float xs = x / float(sigma);
    k[size_t(i)] = std::exp(-0.5f * xs * xs);
    total += k[size_t(i)];
  }
  for (float& v : k) v /= total;
  return k;
}

}  // namespace

Tensor normalize(const Tensor& img, const std::vector<double>& mean,
                 const std::vector<double>& std) {
  EMBER_CHECK(img.defined() && is_floating(img.dtype()), DTypeError, "normalize",
              "expected a floating-point image (to_dtype first), found " +
                  (img.defined() ? std::string(dtype_name(img.dtype()))
                                 : std::string("an undefined tensor")));
  EMBER_CHECK(img.dim() >= 3, ShapeError, "normalize",
              "expected [..., C, H, W], found " + shape_str(img.shape()));
  const int64_t c = img.size(-3);
  auto per_channel = [&](const std::vector<double>& v, const char* what) {
    EMBER_CHECK(v.size() == 1 || int64_t(v.size()) == c, ValueError, "normalize",
                std::string("expected 1 or ") + std::to_string(c) + " " + what + " values, found " +
                    std::to_string(v.size()));
    for (double s : v)
      EMBER_CHECK(std::string(what) != "std" || s != 0, ValueError, "normalize",
                  "std must not be 0");
    return tensor(v, {int64_t(v.size()), 1, 1}, img.dtype(), img.device());
  };
  return (img - per_channel(mean, "mean")) / per_channel(std, "std");
}

Tensor to_dtype(const Tensor& img, DType dtype, bool scale) {
  if (img.dtype() == dtype) return img;
  if (!scale) return img.to(dtype);
  const bool from_f = is_floating(img.dtype()), to_f = is_floating(dtype);
  if (from_f && to_f) return img.to(dtype);
  EMBER_CHECK((from_f || img.dtype() == kU8) && (to_f || dtype == kU8), DTypeError, "to_dtype",
              "scaling converts between u8 and floating point, found " +
                  std::string(dtype_name(img.dtype())) + " to " + std::string(dtype_name(dtype)));
  if (to_f) return img.to(dtype) / 255.0;
  return (img * (255.0 + 1.0 - 1e-3)).to(kU8);  // torchvision's convert_image_dtype
}

Tensor rgb_to_grayscale(const Tensor& img, int64_t channels) {
  check_channels(img, "rgb_to_grayscale", true);
  EMBER_CHECK(channels == 1 || channels == 3, ValueError, "rgb_to_grayscale",
              "expected 1 or 3 output channels, found " + std::to_string(channels));
  Tensor l;
  if (img.size(-3) == 1) {
    l = img;
  } else {
    Tensor x = detail::to_compute(img);
    l = (0.2989 * x.select(-3, 0) + 0.587 * x.select(-3, 1) + 0.114 * x.select(-3, 2))
            .to(img.dtype())
            .unsqueeze(-3);
  }
  if (channels == 3) {
    Shape s = l.shape();
    s[s.size() - 3] = 3;
    l = l.expand(s).contiguous();
  }
  return l;
}

Tensor adjust_brightness(const Tensor& img, double factor) {
  EMBER_CHECK(factor >= 0, ValueError, "adjust_brightness",
              "expected factor >= 0, found " + std::to_string(factor));
  check_channels(img, "adjust_brightness", true);
  return blend(img, zeros_like(img), factor);
}

Tensor adjust_contrast(const Tensor& img, double factor) {
  EMBER_CHECK(factor >= 0, ValueError, "adjust_contrast",
              "expected factor >= 0, found " + std::to_string(factor));
  check_channels(img, "adjust_contrast", true);
  Tensor gray = img.size(-3) == 3 ? rgb_to_grayscale(img) : img;
  Tensor m = mean(detail::to_compute(gray), {-3, -2, -1}, true);
  return blend(img, m, factor);
}

Tensor adjust_saturation(const Tensor& img, double factor) {
  EMBER_CHECK(factor >= 0, ValueError, "adjust_saturation",
              "expected factor >= 0, found " + std::to_string(factor));
  check_channels(img, "adjust_saturation", true);
  if (img.size(-3) == 1) return img;
  return blend(img, rgb_to_grayscale(img), factor);
}

Tensor adjust_hue(const Tensor& img, double factor) {
  EMBER_CHECK(factor >= -0.5 && factor <= 0.5, ValueError, "adjust_hue",
              "expected factor in [-0.5, 0.5], found " + std::to_string(factor));
  check_channels(img, "adjust_hue", true);
  if (img.size(-3) == 1) return img;
  Tensor x = is_floating(img.dtype()) ? img : to_dtype(img, kF32);
  Tensor hsv = rgb_to_hsv(x);
  Tensor h = fmod(hsv.select(-3, 0) + factor, 1.0);
  Tensor rgb = hsv_to_rgb(stack({h, hsv.select(-3, 1), hsv.select(-3, 2)}, -3));
  return is_floating(img.dtype()) ? rgb : to_dtype(rgb, img.dtype());
}

Tensor gaussian_blur(const Tensor& img, const Shape& kernel, std::pair<double, double> sigma) {
  auto b = detail::batched(img, "gaussian_blur");
  EMBER_CHECK(kernel.size() == 2 && kernel[0] > 0 && kernel[1] > 0 && kernel[0] % 2 == 1 &&
                  kernel[1] % 2 == 1,
              ValueError, "gaussian_blur",
              "expected two odd positive kernel sizes, found " + shape_str(kernel));
  EMBER_CHECK(sigma.first > 0 && sigma.second > 0, ValueError, "gaussian_blur",
              "expected positive sigmas, found " + std::to_string(sigma.first) + " and " +
                  std::to_string(sigma.second));
  Tensor x = detail::to_compute(b.x);
  const int64_t c = x.size(1), kx = kernel[0], ky = kernel[1];
  x = ember::pad(x, {kx / 2, kx / 2, ky / 2, ky / 2}, "reflect");
  Tensor wx = tensor(gaussian_kernel(kx, sigma.first), {1, 1, 1, kx}, x.dtype(), x.device())
                  .expand({c, 1, 1, kx});
  Tensor wy = tensor(gaussian_kernel(ky, sigma.second), {1, 1, ky, 1}, x.dtype(), x.device())
                  .expand({c, 1, ky, 1});
  Tensor y =
      conv2d(conv2d(x, wx.contiguous(), {}, {.groups = c}), wy.contiguous(), {}, {.groups = c});
  return b.restore(detail::from_compute(y, img.dtype(), false));
}

Tensor erase(const Tensor& img, int64_t top, int64_t left, int64_t h, int64_t w,
             const Tensor& value) {
  EMBER_CHECK(img.defined() && img.dim() >= 2, ShapeError, "erase", "expected [..., H, W]");
  Tensor out = img.clone();
  out.index_put_({indexing::Ellipsis, Slice(top, top + h), Slice(left, left + w)},
                 value.to(img.dtype()));
  return out;
}

}  // namespace ember::vision

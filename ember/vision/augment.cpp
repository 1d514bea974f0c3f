// Random transforms: torchvision's parameter draws (get_params) from a host Rng, then the
// fixed-parameter transforms.
#include "ember/vision/augment.h"

#include <cmath>
#include <numbers>

#include "ember/ember.h"

namespace ember::vision {

// --- Rng ---
uint64_t detail::item_seed(uint64_t seed, uint64_t index, uint64_t visit) {
  Rng r(seed ^ 0x6A09E667F3BCC909ull);
  uint64_t s = r.next() ^ (index * 0x9E3779B97F4A7C15ull);
  Rng r2(s);
  return r2.next() ^ (visit * 0xC2B2AE3D27D4EB4Full);
}

Rng::Rng(uint64_t seed, uint64_t a, uint64_t b) : state_(detail::item_seed(seed, a, b)) {}

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) {
  return lo + (hi - lo) * (double(next() >> 11) * 0x1.0p-53);
}

int64_t Rng::randint(int64_t lo, int64_t hi) {
  EMBER_CHECK(hi > lo, ValueError, "Rng::randint",
              "expected hi > lo, found [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  const uint64_t n = uint64_t(hi - lo), limit = ~uint64_t(0) - (~uint64_t(0) % n);
  uint64_t x;
  do x = next();
  while (x >= limit);
  return lo + int64_t(x % n);
}

double Rng::normal() {  // Box-Muller
  const double u1 = 1.0 - uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Rng::gamma(double shape) {  // Marsaglia and Tsang
  EMBER_CHECK(shape > 0, ValueError, "Rng::gamma",
              "expected shape > 0, found " + std::to_string(shape));
  if (shape < 1.0) return gamma(shape + 1.0) * std::pow(1.0 - uniform(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do x = normal(), v = 1.0 + c * x;
    while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

double Rng::beta(double a, double b) {
  const double x = gamma(a), y = gamma(b);
  return x / (x + y);
}

// --- composition ---
Tensor Compose::operator()(const Tensor& img, Rng& rng) const {
  Tensor x = img;
  for (auto& t : transforms) x = t(x, rng);
  return x;
}
Tensor RandomApply::operator()(const Tensor& img, Rng& rng) const {
  return rng.bernoulli(p) ? t(img, rng) : img;
}
Tensor RandomChoice::operator()(const Tensor& img, Rng& rng) const {
  EMBER_CHECK(!transforms.empty(), ValueError, "RandomChoice", "expected at least one transform");
  return transforms[size_t(rng.randint(0, int64_t(transforms.size())))](img, rng);
}

// --- geometry ---
Tensor RandomCrop::operator()(const Tensor& img, Rng& rng) const {
  EMBER_CHECK(size.size() == 1 || size.size() == 2, ValueError, "RandomCrop",
              "expected size {h, w} or {s}");
  const int64_t th = size[0], tw = size.size() == 2 ? size[1] : size[0];
  Tensor x = padding.empty() ? img : pad(img, padding, fill, padding_mode);
  if (pad_if_needed && x.size(-1) < tw) x = pad(x, {tw - x.size(-1), 0}, fill, padding_mode);
  if (pad_if_needed && x.size(-2) < th) x = pad(x, {0, th - x.size(-2)}, fill, padding_mode);
  const int64_t h = x.size(-2), w = x.size(-1);
  EMBER_CHECK(h >= th && w >= tw, ValueError, "RandomCrop",
              "crop " + std::to_string(th) + "x" + std::to_string(tw) +
                  " is larger than the image " + std::to_string(h) + "x" + std::to_string(w) +
                  " (set pad_if_needed)");
  if (h == th && w == tw) return x;
  const int64_t i = rng.randint(0, h - th + 1), j = rng.randint(0, w - tw + 1);
  return crop(x, i, j, th, tw);
}

std::array<int64_t, 4> RandomResizedCrop::params(int64_t h, int64_t w, Rng& rng) const {
  const double area = double(h) * double(w);
  const double lr0 = std::log(ratio.first), lr1 = std::log(ratio.second);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(scale.first, scale.second);
    const double aspect = std::exp(rng.uniform(lr0, lr1));
    const int64_t cw = int64_t(std::nearbyint(std::sqrt(target * aspect)));
    const int64_t ch = int64_t(std::nearbyint(std::sqrt(target / aspect)));
    if (cw > 0 && cw <= w && ch > 0 && ch <= h)
      return {rng.randint(0, h - ch + 1), rng.randint(0, w - cw + 1), ch, cw};
  }
  // Fallback: the central crop of the nearest allowed aspect.
  const double in_ratio = double(w) / double(h);
  int64_t cw = w, ch = h;
  if (in_ratio < std::min(ratio.first, ratio.second))
    ch = int64_t(std::nearbyint(double(cw) / std::min(ratio.first, ratio.second)));
  else if (in_ratio > std::max(ratio.first, ratio.second))
    cw = int64_t(std::nearbyint(double(ch) * std::max(ratio.first, ratio.second)));
  return {(h - ch) / 2, (w - cw) / 2, ch, cw};
}

Tensor RandomResizedCrop::operator()(const Tensor& img, Rng& rng) const {
  EMBER_CHECK(img.defined() && img.dim() >= 2, ShapeError, "RandomResizedCrop",
              "expected [..., H, W]");
  const auto [i, j, h, w] = params(img.size(-2), img.size(-1), rng);
  Shape out = size.size() == 1 ? Shape{size[0], size[0]} : size;
  return resized_crop(img, i, j, h, w, out, options);
}

Tensor RandomHorizontalFlip::operator()(const Tensor& img, Rng& rng) const {
  return rng.uniform() < p ? hflip(img) : img;
}
Tensor RandomVerticalFlip::operator()(const Tensor& img, Rng& rng) const {
  return rng.uniform() < p ? vflip(img) : img;
}

Tensor RandomRotation::operator()(const Tensor& img, Rng& rng) const {
  return rotate(img, rng.uniform(degrees.first, degrees.second), expand, options);
}

Tensor RandomAffine::operator()(const Tensor& img, Rng& rng) const {
  const double angle = rng.uniform(degrees.first, degrees.second);
  std::pair<double, double> tr{0, 0}, sh{0, 0};
  if (translate) {
    const double mx = translate->first * double(img.size(-1)),
                 my = translate->second * double(img.size(-2));
    tr = {std::nearbyint(rng.uniform(-mx, mx)), std::nearbyint(rng.uniform(-my, my))};
  }
  const double s = scale ? rng.uniform(scale->first, scale->second) : 1.0;
  if (shear) sh = {rng.uniform((*shear)[0], (*shear)[1]), rng.uniform((*shear)[2], (*shear)[3])};
  return affine(img, angle, tr, s, sh, options);
}

// --- colour and blur ---
Tensor ColorJitter::operator()(const Tensor& img, Rng& rng) const {
  int order[4] = {0, 1, 2, 3};
  for (int i = 3; i > 0; --i) std::swap(order[i], order[rng.randint(0, i + 1)]);
  auto factor = [&](double v) { return rng.uniform(std::max(0.0, 1.0 - v), 1.0 + v); };
  const double b = brightness > 0 ? factor(brightness) : 1, c = contrast > 0 ? factor(contrast) : 1;
  const double s = saturation > 0 ? factor(saturation) : 1,
               h = hue > 0 ? rng.uniform(-hue, hue) : 0;
  Tensor x = img;
  for (int k : order) {
    if (k == 0 && brightness > 0) x = adjust_brightness(x, b);
    if (k == 1 && contrast > 0) x = adjust_contrast(x, c);
    if (k == 2 && saturation > 0) x = adjust_saturation(x, s);
    if (k == 3 && hue > 0) x = adjust_hue(x, h);
  }
  return x;
}

Tensor RandomGrayscale::operator()(const Tensor& img, Rng& rng) const {
  return rng.uniform() < p ? rgb_to_grayscale(img, img.size(-3)) : img;
}

Tensor GaussianBlur::operator()(const Tensor& img, Rng& rng) const {
  const double s = rng.uniform(sigma.first, sigma.second);
  Shape k = kernel_size.size() == 1 ? Shape{kernel_size[0], kernel_size[0]} : kernel_size;
  return gaussian_blur(img, k, {s, s});
}

Tensor RandomErasing::operator()(const Tensor& img, Rng& rng) const {
  if (!(rng.uniform() < p)) return img;
  const int64_t c = img.dim() >= 3 ? img.size(-3) : 1, h = img.size(-2), w = img.size(-1);
  const double area = double(h) * double(w), lr0 = std::log(ratio.first),
               lr1 = std::log(ratio.second);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area = area * rng.uniform(scale.first, scale.second);
    const double aspect = std::exp(rng.uniform(lr0, lr1));
    const int64_t eh = int64_t(std::nearbyint(std::sqrt(erase_area * aspect)));
    const int64_t ew = int64_t(std::nearbyint(std::sqrt(erase_area / aspect)));
    if (!(eh < h && ew < w)) continue;
    Tensor v = random_value
                   ? randn({c, eh, ew}, Generator(rng.next()), TensorOptions{kF32, img.device()})
                   : scalar_tensor(value, kF32, img.device());
    const int64_t i = rng.randint(0, h - eh + 1), j = rng.randint(0, w - ew + 1);
    return erase(img, i, j, eh, ew, v);
  }
  return img;
}

// --- batch mixing ---
namespace {
void check_batch(const Tensor& images, const Tensor& labels, int64_t classes, const char* op) {
  EMBER_CHECK(images.defined() && images.dim() == 4, ShapeError, op,
              "expected images [N, C, H, W], found " +
                  (images.defined() ? shape_str(images.shape()) : std::string("none")));
  EMBER_CHECK(labels.defined() && labels.dim() == 1 && labels.size(0) == images.size(0), ShapeError,
              op,
              "expected labels [" + std::to_string(images.size(0)) + "], found " +
                  (labels.defined() ? shape_str(labels.shape()) : std::string("none")));
  EMBER_CHECK(classes > 0, ValueError, op,
              "expected num_classes > 0, found " + std::to_string(classes));
}
Tensor mix_labels(const Tensor& labels, int64_t classes, double lam) {
  Tensor y = one_hot(labels.to(kI64), classes).to(kF32);
  return roll(y, {1}, {0}) * (1.0 - lam) + y * lam;
}
}  // namespace

std::pair<Tensor, Tensor> MixUp::apply(const Tensor& images, const Tensor& labels,
                                       double lam) const {
  check_batch(images, labels, num_classes, "MixUp");
  Tensor x = is_floating(images.dtype()) ? images : images.to(kF32);
  Tensor out = roll(x, {1}, {0}) * (1.0 - lam) + x * lam;
  if (!is_floating(images.dtype())) out = round(out).to(images.dtype());
  return {out, mix_labels(labels, num_classes, lam)};
}

std::pair<Tensor, Tensor> MixUp::operator()(const Tensor& images, const Tensor& labels,
                                            Rng& rng) const {
  return apply(images, labels, rng.beta(alpha, alpha));
}

std::pair<Tensor, Tensor> CutMix::apply(const Tensor& images, const Tensor& labels,
                                        std::array<int64_t, 4> box) const {
  check_batch(images, labels, num_classes, "CutMix");
  const auto [y1, x1, y2, x2] = box;
  const int64_t h = images.size(2), w = images.size(3);
  Tensor out = images.clone();
  if (y2 > y1 && x2 > x1) {
    Tensor patch = roll(images, {1}, {0}).narrow(2, y1, y2 - y1).narrow(3, x1, x2 - x1);
    out.index_put_({indexing::Ellipsis, Slice(y1, y2), Slice(x1, x2)}, patch);
  }
  const double lam = 1.0 - double((x2 - x1) * (y2 - y1)) / double(w * h);
  return {out, mix_labels(labels, num_classes, lam)};
}

std::pair<Tensor, Tensor> CutMix::operator()(const Tensor& images, const Tensor& labels,
                                             Rng& rng) const {
  const double lam = rng.beta(alpha, alpha);
  const int64_t h = images.size(-2), w = images.size(-1);
  const int64_t rx = rng.randint(0, w), ry = rng.randint(0, h);
  const double r = 0.5 * std::sqrt(1.0 - lam);
  const int64_t rw = int64_t(r * double(w)), rh = int64_t(r * double(h));
  return apply(images, labels,
               {std::max<int64_t>(ry - rh, 0), std::max<int64_t>(rx - rw, 0), std::min(ry + rh, h),
                std::min(rx + rw, w)});
}

}  // namespace ember::vision

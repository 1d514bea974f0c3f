#pragma once
// Random image transforms, composable like torchvision.transforms.v2: each is a small options
// struct called as t(img, rng), drawing its parameters from a seeded host generator (Rng) and
// applying the fixed-parameter transform of ember/vision/transforms.h. One call draws one set
// of parameters for the whole tensor, so a batch [N, C, H, W] is transformed alike (as v2 does);
// per-image randomness comes from transforming items, e.g. with vision::augment below inside
// a DataLoader. MixUp and CutMix work on batches with their labels.
#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/data/example.h"
#include "ember/vision/transforms.h"

namespace ember::vision {

/// A seeded host generator for transform parameters (SplitMix64: the same numbers on every
/// platform). Cheap to make: one per item is the usual use.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : state_(seed) {}
  /// Seeded from several values (a seed, an item index, a visit count) mixed together.
  Rng(uint64_t seed, uint64_t a, uint64_t b = 0);
  uint64_t next();
  /// Uniform in [lo, hi).
  double uniform(double lo = 0.0, double hi = 1.0);
  /// Uniform integer in [lo, hi); hi > lo.
  int64_t randint(int64_t lo, int64_t hi);
  bool bernoulli(double p) { return uniform() < p; }
  double normal();
  /// Gamma(shape, 1) and Beta(a, b), for MixUp / CutMix's mixing weights.
  double gamma(double shape);
  double beta(double a, double b);

 private:
  uint64_t state_;
};

/// Any transform: a callable (const Tensor&, Rng&) -> Tensor, or (const Tensor&) -> Tensor.
class Transform {
 public:
  using Fn = std::function<Tensor(const Tensor&, Rng&)>;
  template <class F>
  requires std::is_invocable_r_v<Tensor, const F&, const Tensor&, Rng&> Transform(F f)
      : fn_(std::move(f)) {}  // NOLINT: any transform converts
  template <class F>
  requires(std::is_invocable_r_v<Tensor, const F&, const Tensor&> &&
           !std::is_invocable_r_v<Tensor, const F&, const Tensor&, Rng&>) Transform(F f)
      : fn_([f = std::move(f)](const Tensor& x, Rng&) { return f(x); }) {}  // NOLINT
  Tensor operator()(const Tensor& img, Rng& rng) const { return fn_(img, rng); }
  /// With a generator of its own, seeded by `seed`.
  Tensor operator()(const Tensor& img, uint64_t seed = 0) const {
    Rng rng(seed);
    return fn_(img, rng);
  }

 private:
  Fn fn_;
};

/// The transforms one after another.
struct Compose {
  std::vector<Transform> transforms;
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
/// `t` with probability p.
struct RandomApply {
  Transform t;
  double p = 0.5;
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
/// One of the transforms, picked uniformly.
struct RandomChoice {
  std::vector<Transform> transforms;
  Tensor operator()(const Tensor& img, Rng& rng) const;
};

struct Resize {
  Shape size;
  ResizeOptions options = {};
  Tensor operator()(const Tensor& img, Rng&) const { return resize(img, size, options); }
};
struct CenterCrop {
  Shape size;
  Tensor operator()(const Tensor& img, Rng&) const { return center_crop(img, size); }
};
struct RandomCrop {
  Shape size;
  Shape padding = {};  // as for pad(); applied first
  bool pad_if_needed = false;
  double fill = 0;
  PadMode padding_mode = PadMode::Constant;
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
struct RandomResizedCrop {
  Shape size;
  std::pair<double, double> scale = {0.08, 1.0};
  std::pair<double, double> ratio = {3.0 / 4.0, 4.0 / 3.0};
  ResizeOptions options = {};
  Tensor operator()(const Tensor& img, Rng& rng) const;
  /// (top, left, height, width) of the crop for an image of h x w (torchvision's get_params).
  std::array<int64_t, 4> params(int64_t h, int64_t w, Rng& rng) const;
};
struct RandomHorizontalFlip {
  double p = 0.5;
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
struct RandomVerticalFlip {
  double p = 0.5;
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
struct RandomRotation {
  std::pair<double, double> degrees;  // the angle is drawn uniformly in [first, second]
  bool expand = false;
  AffineOptions options = {};
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
struct RandomAffine {
  std::pair<double, double> degrees = {0, 0};
  std::optional<std::pair<double, double>> translate = {};  // max fractions of width, height
  std::optional<std::pair<double, double>> scale = {};
  std::optional<std::array<double, 4>> shear = {};  // x range, then y range (degrees)
  AffineOptions options = {};
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
struct Pad {
  Shape padding;
  double fill = 0;
  PadMode mode = PadMode::Constant;
  Tensor operator()(const Tensor& img, Rng&) const { return pad(img, padding, fill, mode); }
};
struct Normalize {
  std::vector<double> mean, std;
  Tensor operator()(const Tensor& img, Rng&) const { return normalize(img, mean, std); }
};
struct ToDtype {
  DType dtype = kF32;
  bool scale = true;
  Tensor operator()(const Tensor& img, Rng&) const { return to_dtype(img, dtype, scale); }
};
/// Brightness, contrast and saturation factors in [max(0, 1 - v), 1 + v], hue in [-v, v],
/// applied in a random order (torchvision's ColorJitter).
struct ColorJitter {
  double brightness = 0, contrast = 0, saturation = 0, hue = 0;
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
struct Grayscale {
  int64_t channels = 1;
  Tensor operator()(const Tensor& img, Rng&) const { return rgb_to_grayscale(img, channels); }
};
struct RandomGrayscale {
  double p = 0.1;
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
struct GaussianBlur {
  Shape kernel_size;                             // {kx, ky} or {k}
  std::pair<double, double> sigma = {0.1, 2.0};  // drawn uniformly, the same for x and y
  Tensor operator()(const Tensor& img, Rng& rng) const;
};
/// torchvision's RandomErasing: a rectangle of random area and aspect set to `value`, or to
/// normal noise when random_value.
struct RandomErasing {
  double p = 0.5;
  std::pair<double, double> scale = {0.02, 0.33};
  std::pair<double, double> ratio = {0.3, 3.3};
  double value = 0;
  bool random_value = false;
  Tensor operator()(const Tensor& img, Rng& rng) const;
};

/// MixUp and CutMix (transforms.v2): images [N, C, H, W] and int64 labels [N] become mixed
/// images and soft labels [N, num_classes]; each image is mixed with the one before it in the
/// batch (roll by 1), with lam ~ Beta(alpha, alpha).
struct MixUp {
  int64_t num_classes;
  double alpha = 1.0;
  std::pair<Tensor, Tensor> operator()(const Tensor& images, const Tensor& labels, Rng& rng) const;
  /// With a given lam.
  std::pair<Tensor, Tensor> apply(const Tensor& images, const Tensor& labels, double lam) const;
};
struct CutMix {
  int64_t num_classes;
  double alpha = 1.0;
  std::pair<Tensor, Tensor> operator()(const Tensor& images, const Tensor& labels, Rng& rng) const;
  /// With a given box (top, left, bottom, right); the labels mix by its area.
  std::pair<Tensor, Tensor> apply(const Tensor& images, const Tensor& labels,
                                  std::array<int64_t, 4> box) const;
};

namespace detail {
/// Mixes `seed`, an item index and its visit count into one generator seed.
uint64_t item_seed(uint64_t seed, uint64_t index, uint64_t visit);

/// Items of `src` with `t` applied to the image (the item itself, or an Example's input): the
/// k-th get(i) uses Rng(seed, i, k), so the augmentation of each item changes every epoch yet
/// depends only on the seed and the visits, never on which worker thread makes it.
template <class T>
class AugmentDataset final : public data::Dataset<T> {
 public:
  AugmentDataset(data::DatasetPtr<T> src, Transform t, uint64_t seed)
      : src_(std::move(src)),
        t_(std::move(t)),
        seed_(seed),
        visits_(std::make_unique<std::atomic<uint32_t>[]>(size_t(src_->size()))) {}
  T get(int64_t i) const override {
    data::detail::check_item_index("augment", i, size());
    const uint32_t k = visits_[size_t(i)].fetch_add(1, std::memory_order_relaxed);
    Rng rng(seed_, uint64_t(i), k);
    T item = src_->get(i);
    if constexpr (std::is_same_v<T, data::Example>) {
      item.first = t_(item.first, rng);
    } else {
      item = t_(item, rng);
    }
    return item;
  }
  int64_t size() const override { return src_->size(); }

 private:
  data::DatasetPtr<T> src_;
  Transform t_;
  uint64_t seed_;
  std::unique_ptr<std::atomic<uint32_t>[]> visits_;
};
}  // namespace detail

/// `src` with `t` applied to each item's image on every get (Tensor or data::Example items).
template <class T>
data::DatasetPtr<T> augment(data::DatasetPtr<T> src, Transform t, uint64_t seed) {
  return std::make_shared<detail::AugmentDataset<T>>(std::move(src), std::move(t), seed);
}

}  // namespace ember::vision

#pragma once
// Fashion-MNIST (and MNIST, same layout): 28x28 grey images with labels 0-9, read from the four
// IDX files (gzip'd or not) of a folder.
#include <array>
#include <string>
#include <utility>

#include "ember/data/dataset.h"
#include "ember/data/example.h"
#include "ember/tensor.h"

namespace ember::data {

/// Items are Examples: (image [1, 28, 28] f32 in [0, 1], label 0-d i64).
class FashionMNIST final : public Dataset<Example> {
 public:
  /// Where Debian's dataset-fashion-mnist package installs the files.
  static constexpr const char* kDefaultRoot = "/usr/share/datasets/fashion-mnist";
  static constexpr std::array<const char*, 10> kClasses = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

  /// Loads the train (60000) or test (10000) split of `root`: train-images-idx3-ubyte[.gz] and
  /// train-labels-idx1-ubyte[.gz], or the t10k-* pair. Throws ValueError naming the files when
  /// they are missing, corrupt or disagree.
  explicit FashionMNIST(const std::string& root = kDefaultRoot, bool train = true);
  /// True when `root` holds both files of the split.
  static bool available(const std::string& root = kDefaultRoot, bool train = true);

  Example get(int64_t i) const override;
  int64_t size() const override { return n_; }
  /// All images, u8 [N, 28, 28], and labels, u8 [N], as stored.
  const Tensor& images() const { return images_; }
  const Tensor& labels() const { return labels_; }

 private:
  Tensor images_, labels_;
  int64_t n_ = 0;
};

}  // namespace ember::data

#include "ember/data/fashion_mnist.h"

#include <filesystem>

#include "ember/data/idx.h"
#include "ember/error.h"

namespace ember::data {
namespace {
/// `root/name.gz` when present, else `root/name` (which read_idx reports if missing).
std::string find_file(const std::string& root, const std::string& name) {
  std::filesystem::path p = std::filesystem::path(root) / name;
  std::filesystem::path gz = p;
  gz += ".gz";
  return std::filesystem::exists(gz) ? gz.string() : p.string();
}
std::string prefix(bool train) { return train ? "train" : "t10k"; }
}  // namespace

bool FashionMNIST::available(const std::string& root, bool train) {
  return std::filesystem::exists(find_file(root, prefix(train) + "-images-idx3-ubyte")) &&
         std::filesystem::exists(find_file(root, prefix(train) + "-labels-idx1-ubyte"));
}

FashionMNIST::FashionMNIST(const std::string& root, bool train) {
  std::string ip = find_file(root, prefix(train) + "-images-idx3-ubyte");
  std::string lp = find_file(root, prefix(train) + "-labels-idx1-ubyte");
  images_ = read_idx(ip);
  labels_ = read_idx(lp);
  auto fail = [](const std::string& m) { throw ValueError("[FashionMNIST] " + m); };
  if (images_.dtype() != kU8 || images_.dim() != 3 || images_.size(1) != 28 ||
      images_.size(2) != 28)
    fail(ip + ": expected u8 images of shape [N, 28, 28], found " +
         std::string(dtype_name(images_.dtype())) + " " + shape_str(images_.shape()));
  if (labels_.dtype() != kU8 || labels_.dim() != 1)
    fail(lp + ": expected u8 labels of shape [N], found " +
         std::string(dtype_name(labels_.dtype())) + " " + shape_str(labels_.shape()));
  if (labels_.size(0) != images_.size(0))
    fail(ip + " holds " + std::to_string(images_.size(0)) + " images but " + lp + " holds " +
         std::to_string(labels_.size(0)) + " labels");
  n_ = images_.size(0);
  const uint8_t* l = labels_.data_ptr<uint8_t>();
  for (int64_t i = 0; i < n_; ++i)
    if (l[i] > 9) fail(lp + ": label " + std::to_string(l[i]) + " at " + std::to_string(i) +
                       " is outside 0..9");
}

Example FashionMNIST::get(int64_t i) const {
  detail::check_item_index("FashionMNIST", i, n_);
  constexpr int64_t kPixels = 28 * 28;
  const uint8_t* src = images_.data_ptr<uint8_t>() + i * kPixels;
  std::vector<float> px(kPixels);
  for (int64_t k = 0; k < kPixels; ++k) px[size_t(k)] = float(src[k]) / 255.0f;
  Tensor label = scalar_tensor(int64_t(labels_.data_ptr<uint8_t>()[i]), kI64);
  return {tensor(px, {1, 28, 28}), label};
}

}  // namespace ember::data

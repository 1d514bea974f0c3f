#pragma once
// ImageFolder: a directory with one sub-folder per class (torchvision.datasets.ImageFolder's
// layout). The files are listed when the dataset is made; each image is decoded on get().
#include <functional>
#include <string>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/data/example.h"
#include "ember/tensor.h"

namespace ember::data {

/// Reads the image file at `path` into a uint8 tensor.
using ImageDecoder = std::function<Tensor(const std::string& path)>;

/// The default decoder: PNG, JPEG, BMP, GIF (first frame), TGA, PNM into a uint8 [C, H, W]
/// tensor with `channels` channels (1 gray, 3 RGB, 4 RGBA; 0 as stored). Throws ValueError
/// naming the file for a missing, corrupt or truncated image.
Tensor read_image_file(const std::string& path, int channels = 3);

struct ImageFolderOptions {
  /// File name endings that count as images (compared ignoring case).
  std::vector<std::string> extensions = {".png", ".jpg", ".jpeg", ".bmp", ".gif",
                                         ".tga", ".ppm", ".pgm",  ".pnm"};
  /// Decodes one file (default: read_image_file(path, 3)). Called from the loader's workers.
  ImageDecoder decode = {};
};

/// Items (image, label): the decoded image and a 0-d int64 class index. Classes are the
/// sub-folders of `root` in sorted order; each class's images are every matching file below its
/// folder (sub-folders included), in sorted path order. Throws ValueError when `root` is not a
/// directory, has no sub-folder, or a class folder holds no image (as torchvision does).
class ImageFolder final : public Dataset<Example> {
 public:
  explicit ImageFolder(const std::string& root, ImageFolderOptions o = {});
  Example get(int64_t i) const override;
  int64_t size() const override { return int64_t(files_.size()); }
  /// The class names (sub-folder names), index = label.
  const std::vector<std::string>& classes() const { return classes_; }
  /// Path and label of item `i`, without decoding it.
  const std::string& path(int64_t i) const;
  int64_t label(int64_t i) const;
  /// Every item's label, in order (for stratified_split and stratified_sample).
  const std::vector<int64_t>& labels() const { return labels_; }

 private:
  std::vector<std::string> classes_, files_;
  std::vector<int64_t> labels_;
  ImageDecoder decode_;
};

}  // namespace ember::data

// ImageFolder and the default image decoder. The decoder is the one function that reads image
// files (stb_image, Debian libstb-dev, compiled into this file alone with static linkage);
// ember/vision's image I/O can take its place without touching ImageFolder.
#include "ember/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "ember/detail/file.h"
#include "ember/ops/layout.h"
#include "ember/vision/image.h"

#if __has_include(<stb/stb_image.h>)
#define EMBER_DATA_STB 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_NO_HDR
#define STBI_NO_LINEAR
#include <stb/stb_image.h>
#pragma GCC diagnostic pop
#endif

namespace ember::data {
namespace fs = std::filesystem;

Tensor read_image_file(const std::string& path, int channels) {
  if (channels < 0 || channels > 4)
    throw ValueError("[read_image_file] channels must be 0 (as stored), 1, 3 or 4, found " +
                     std::to_string(channels));
  std::string bytes, error;
  if (!ember::detail::read_whole_file(path, uint64_t(1) << 31, bytes, error))
    throw ValueError("[read_image_file] '" + path + "': " + error);
#if EMBER_DATA_STB
  // The formats ember/vision reads (PNG, JPEG, BMP, GIF) have their structure checked first:
  // stb_image must not see what it mishandles (a JPEG Huffman table of more than 256 codes).
  const std::span<const uint8_t> raw(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (vision::sniff_format(raw)) {
    try {
      vision::image_info(raw);
    } catch (const vision::ImageError& e) {
      throw ValueError("[read_image_file] '" + path + "': cannot decode (" + e.what() + ")");
    }
  }
  int w = 0, h = 0, stored = 0;
  // Refuse decompression bombs before anything is allocated (PIL's limit: 2 x 89,478,485 pixels).
  if (stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()), int(bytes.size()), &w,
                            &h, &stored) &&
      int64_t(w) * int64_t(h) > 178956970)
    throw ValueError("[read_image_file] '" + path + "': " + std::to_string(w) + "x" +
                     std::to_string(h) + " pixels, more than 178956970 (a decompression bomb?)");
  unsigned char* px = stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                                            int(bytes.size()), &w, &h, &stored, channels);
  if (!px)
    throw ValueError("[read_image_file] '" + path + "': cannot decode (" +
                     std::string(stbi_failure_reason() ? stbi_failure_reason() : "unknown") +
                     "): not an image, or a corrupt or truncated one");
  const int c = channels ? channels : stored;
  Tensor hwc = from_blob_copy(px, DType::U8, {h, w, c}, DType::U8, Device::flex());
  stbi_image_free(px);
  return permute(hwc, {2, 0, 1}).contiguous();
#else
  throw NotImplementedError("[read_image_file] '" + path +
                            "': this build has no image decoder (install libstb-dev) ");
#endif
}

namespace {
bool has_extension(const fs::path& p, const std::vector<std::string>& exts) {
  std::string name = p.filename().string();
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  for (std::string e : exts) {
    std::transform(e.begin(), e.end(), e.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    if (name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0)
      return true;
  }
  return false;
}
}  // namespace

ImageFolder::ImageFolder(const std::string& root, ImageFolderOptions o)
    : decode_(o.decode ? std::move(o.decode)
                       : ImageDecoder([](const std::string& p) { return read_image_file(p, 3); })) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw ValueError("[ImageFolder] '" + root + "' is not a directory");
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory()) dirs.push_back(e.path().filename().string());
  std::sort(dirs.begin(), dirs.end());
  for (const std::string& d : dirs) {
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(
             fs::path(root) / d, fs::directory_options::skip_permission_denied, ec))
      if (e.is_regular_file() && has_extension(e.path(), o.extensions))
        files.push_back(e.path().string());
    if (files.empty())  // torchvision refuses such a class too (its labels would shift)
      throw ValueError("[ImageFolder] the class folder '" + (fs::path(root) / d).string() +
                       "' holds no image file (extensions: " + std::to_string(o.extensions.size()) +
                       " endings, e.g. " + (o.extensions.empty() ? "none" : o.extensions[0]) + ")");
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      files_.push_back(std::move(f));
      labels_.push_back(int64_t(classes_.size()));
    }
    classes_.push_back(d);
  }
  if (classes_.empty()) throw ValueError("[ImageFolder] '" + root + "' has no class folder");
}

const std::string& ImageFolder::path(int64_t i) const {
  detail::check_item_index("ImageFolder", i, size());
  return files_[size_t(i)];
}

int64_t ImageFolder::label(int64_t i) const {
  detail::check_item_index("ImageFolder", i, size());
  return labels_[size_t(i)];
}

Example ImageFolder::get(int64_t i) const {
  detail::check_item_index("ImageFolder", i, size());
  return {decode_(files_[size_t(i)]), scalar_tensor(labels_[size_t(i)], DType::I64)};
}

}  // namespace ember::data

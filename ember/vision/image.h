#pragma once
// Image files as u8 tensors: decode PNG, JPEG, BMP and GIF (first frame), encode PNG and JPEG,
// and lay a batch out as one grid image (torchvision.io / torchvision.utils). Every file's
// structure is checked before it is decoded, so a corrupt or truncated file throws ImageError
// naming the format, the byte offset and what was wrong. Files are written atomically.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ember/device.h"
#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::vision {

/// A file that is not a valid image of a format ember reads, or a tensor that cannot be encoded.
class ImageError : public Error {
  using Error::Error;
};

enum class ImageFormat { Png, Jpeg, Bmp, Gif };
/// "PNG", "JPEG", "BMP", "GIF".
const char* format_name(ImageFormat f);

/// Which channels a decode gives (torchvision.io.ImageReadMode).
enum class ImageMode { Unchanged, Gray, GrayAlpha, Rgb, Rgba };
/// Where channels sit: [C, H, W] (torchvision's tensors) or [H, W, C] (the file's order).
enum class Layout { Chw, Hwc };

/// What the header says; image_info checks the whole file's structure to get it.
struct ImageInfo {
  ImageFormat format;
  int64_t width = 0, height = 0;
  int64_t channels = 0;  // as stored: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA
};

struct DecodeOptions {
  ImageMode mode = ImageMode::Unchanged;
  Layout layout = Layout::Chw;
  std::optional<Device> device = {};  // the default device when empty
  /// Larger images are refused before anything is allocated (PIL's decompression-bomb limit).
  int64_t max_pixels = 178956970;
};

/// The format from the first bytes, or nullopt.
std::optional<ImageFormat> sniff_format(std::span<const uint8_t> bytes);
/// Checks the file's structure (signature, chunk lengths and CRCs, segment lengths, end
/// markers) and returns its header; throws ImageError saying what is wrong and where.
ImageInfo image_info(std::span<const uint8_t> bytes);
/// A u8 tensor [C, H, W] or [H, W, C]; throws ImageError for a corrupt, truncated or
/// unsupported file.
Tensor decode_image(std::span<const uint8_t> bytes, const DecodeOptions& o = {});
/// The whole file `path` (throws ImageError naming it when it cannot be read), decoded.
Tensor read_image(const std::string& path, const DecodeOptions& o = {});
/// The bytes of the file `path`; throws ImageError naming it when it cannot be read.
std::vector<uint8_t> read_file(const std::string& path);

/// An image to encode: u8, or floating point in [0, 1] (scaled by 255 and rounded, clamped);
/// [H, W] or [C, H, W] / [H, W, C] (per `layout`) with 1 to 4 channels; any device.
struct EncodeOptions {
  Layout layout = Layout::Chw;
  int quality = 75;         // JPEG, 1..100
  int png_compression = 6;  // zlib level, 0..9
};
std::vector<uint8_t> encode_png(const Tensor& img, const EncodeOptions& o = {});
/// JPEG keeps 1 or 3 channels (an alpha channel is dropped).
std::vector<uint8_t> encode_jpeg(const Tensor& img, const EncodeOptions& o = {});
/// Writes `img` atomically as PNG or JPEG, chosen by the extension (.png, .jpg, .jpeg).
void write_image(const std::string& path, const Tensor& img, const EncodeOptions& o = {});

/// torchvision.utils.make_grid's options.
struct GridOptions {
  int64_t nrow = 8;     // images per row
  int64_t padding = 2;  // pixels between images and around the grid
  double pad_value = 0;
  /// Shift and scale to [0, 1] by value_range (or the batch's min and max: a host read).
  bool normalize = false;
  std::optional<std::pair<double, double>> value_range = {};
  bool scale_each = false;  // normalize each image by its own min and max
};
/// A batch [N, C, H, W] (or one [C, H, W] image) laid out as one [C', H', W'] image, as
/// torchvision.utils.make_grid does (one channel becomes three). Runs on the batch's device.
Tensor to_image_grid(const Tensor& batch, const GridOptions& o = {});
/// to_image_grid, then write_image (torchvision.utils.save_image).
void save_image_grid(const Tensor& batch, const std::string& path, const GridOptions& g = {},
                     const EncodeOptions& e = {});

}  // namespace ember::vision

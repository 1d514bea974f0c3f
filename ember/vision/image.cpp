// Decoding and encoding with stb_image / stb_image_write (Debian libstb-dev's headers, compiled
// here as static functions: no symbol clashes with a program that links libstb itself), and the
// grid layout of torchvision.utils.make_grid written in ember ops.
#include "ember/vision/image.h"

#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ember/detail/file.h"
#include "ember/ember.h"
#include "ember/store/atomic_file.h"

namespace {
thread_local int g_png_level = 6;
// stb_image_write's PNG deflate through zlib (faster and smaller than stb's own).
unsigned char* zlib_compress(unsigned char* data, int len, int* out_len, int /*quality*/) {
  uLongf n = compressBound(uLong(len));
  auto* out = static_cast<unsigned char*>(std::malloc(n));
  if (!out || compress2(out, &n, data, uLong(len), g_png_level) != Z_OK) {
    std::free(out);
    return nullptr;
  }
  *out_len = int(n);
  return out;
}
}  // namespace

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#define STBIW_ZLIB_COMPRESS zlib_compress
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#include "stb_image.h"
#include "stb_image_write.h"
#pragma GCC diagnostic pop

namespace ember::vision {
namespace {

int mode_channels(ImageMode m) {
  switch (m) {
    case ImageMode::Unchanged:
      return 0;
    case ImageMode::Gray:
      return 1;
    case ImageMode::GrayAlpha:
      return 2;
    case ImageMode::Rgb:
      return 3;
    case ImageMode::Rgba:
      return 4;
  }
  return 0;
}

struct StbFree {
  void operator()(unsigned char* p) const { stbi_image_free(p); }
};

/// `img` as a contiguous host u8 [H, W, C] tensor, checked for encoding.
Tensor host_hwc(const Tensor& img, Layout layout, const char* op) {
  EMBER_CHECK(img.defined(), vision::ImageError, op,
              "expected an image tensor, found an undefined one");
  Tensor x = img;
  if (x.dim() == 2) {
    x = x.unsqueeze(-1);
  } else {
    EMBER_CHECK(x.dim() == 3, vision::ImageError, op,
                "expected [H, W] or a 3-d image, found shape " + shape_str(img.shape()));
    if (layout == Layout::Chw) {
      EMBER_CHECK(x.size(0) >= 1 && x.size(0) <= 4, vision::ImageError, op,
                  "expected [C, H, W] with 1 to 4 channels, found shape " + shape_str(img.shape()) +
                      " (pass .layout = Layout::Hwc for [H, W, C])");
      x = x.permute({1, 2, 0});
    }
  }
  EMBER_CHECK(x.size(2) >= 1 && x.size(2) <= 4, vision::ImageError, op,
              "expected 1 to 4 channels, found shape " + shape_str(img.shape()));
  EMBER_CHECK(x.size(0) > 0 && x.size(1) > 0 && x.size(0) <= 65535 && x.size(1) <= 65535,
              vision::ImageError, op,
              "expected 1 to 65535 rows and columns, found shape " + shape_str(img.shape()));
  if (is_floating(x.dtype())) {
    x = floor(clamp(x * 255.0 + 0.5, 0.0, 255.0)).to(kU8);  // torchvision's save_image
  } else {
    EMBER_CHECK(
        x.dtype() == kU8, vision::ImageError, op,
        "expected a u8 or floating-point image, found " + std::string(dtype_name(x.dtype())));
  }
  return x.cpu().contiguous();
}

void append(void* ctx, void* data, int n) {
  auto* out = static_cast<std::vector<uint8_t>*>(ctx);
  auto* p = static_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + n);
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  if (s.size() < n) return false;
  for (size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - n + i])) != suffix[i]) return false;
  return true;
}

}  // namespace

Tensor decode_image(std::span<const uint8_t> bytes, const DecodeOptions& o) {
  const ImageInfo info = image_info(bytes);
  EMBER_CHECK(info.width * info.height <= o.max_pixels, vision::ImageError, "decode_image",
              std::string(format_name(info.format)) + ": " + std::to_string(info.width) + "x" +
                  std::to_string(info.height) +
                  " exceeds max_pixels = " + std::to_string(o.max_pixels));
  EMBER_CHECK(
      bytes.size() <= size_t(INT32_MAX), vision::ImageError, "decode_image",
      "expected at most 2 GiB of file data, found " + std::to_string(bytes.size()) + " bytes");
  int w = 0, h = 0, comp = 0;
  const int want = mode_channels(o.mode);
  std::unique_ptr<unsigned char, StbFree> px(
      stbi_load_from_memory(bytes.data(), int(bytes.size()), &w, &h, &comp, want));
  if (!px)
    throw ImageError(std::string("[decode_image] ") + format_name(info.format) +
                     ": the decoder rejected the data: " + stbi_failure_reason());
  const int64_t c = want ? want : comp;
  const Device dev = resolve_device(o.device);
  if (o.layout == Layout::Hwc || c == 1) {
    Shape s = o.layout == Layout::Hwc ? Shape{h, w, c} : Shape{c, h, w};
    return from_blob_copy(px.get(), kU8, s, kU8, dev);
  }
  // Planes from stb's interleaved pixels here, on the host, straight into the tensor when it
  // lives in host memory: cheaper than a strided copy later.
  const size_t plane = size_t(h) * size_t(w);
  const bool direct = dev == Device::flex();
  std::vector<uint8_t> staging(direct ? 0 : plane * size_t(c));
  Tensor t = direct ? empty({c, h, w}, TensorOptions{kU8, dev}) : Tensor();
  uint8_t* dst = direct ? t.data_ptr<uint8_t>() : staging.data();
  const uint8_t* src = px.get();
  if (c == 3) {
    uint8_t *r = dst, *g = dst + plane, *b = dst + 2 * plane;
    for (size_t i = 0; i < plane; ++i)
      r[i] = src[3 * i], g[i] = src[3 * i + 1], b[i] = src[3 * i + 2];
  } else {
    for (size_t i = 0; i < plane; ++i)
      for (int64_t k = 0; k < c; ++k) dst[size_t(k) * plane + i] = src[i * size_t(c) + size_t(k)];
  }
  return direct ? t : from_blob_copy(staging.data(), kU8, {c, h, w}, kU8, dev);
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::string bytes, error;
  if (!detail::read_whole_file(path, uint64_t(1) << 31, bytes, error))
    throw ImageError("[read_image] " + path + ": " + error);
  return {bytes.begin(), bytes.end()};
}

Tensor read_image(const std::string& path, const DecodeOptions& o) {
  const std::vector<uint8_t> bytes = read_file(path);
  try {
    return decode_image(bytes, o);
  } catch (const ImageError& e) {
    throw ImageError(std::string(e.what()) + " (file " + path + ")");
  }
}

std::vector<uint8_t> encode_png(const Tensor& img, const EncodeOptions& o) {
  EMBER_CHECK(o.png_compression >= 0 && o.png_compression <= 9, vision::ImageError, "encode_png",
              "expected png_compression in 0..9, found " + std::to_string(o.png_compression));
  Tensor x = host_hwc(img, o.layout, "encode_png");
  const int h = int(x.size(0)), w = int(x.size(1)), c = int(x.size(2));
  std::vector<uint8_t> out;
  g_png_level = o.png_compression;
  if (!stbi_write_png_to_func(append, &out, w, h, c, x.data_ptr<uint8_t>(), w * c))
    throw ImageError("[encode_png] the encoder failed for a " + std::to_string(w) + "x" +
                     std::to_string(h) + " image");
  return out;
}

std::vector<uint8_t> encode_jpeg(const Tensor& img, const EncodeOptions& o) {
  EMBER_CHECK(o.quality >= 1 && o.quality <= 100, vision::ImageError, "encode_jpeg",
              "expected quality in 1..100, found " + std::to_string(o.quality));
  Tensor x = host_hwc(img, o.layout, "encode_jpeg");
  if (x.size(2) == 2 || x.size(2) == 4) x = x.narrow(2, 0, x.size(2) - 1).contiguous();  // no alpha
  const int h = int(x.size(0)), w = int(x.size(1)), c = int(x.size(2));
  std::vector<uint8_t> out;
  if (!stbi_write_jpg_to_func(append, &out, w, h, c, x.data_ptr<uint8_t>(), o.quality))
    throw ImageError("[encode_jpeg] the encoder failed for a " + std::to_string(w) + "x" +
                     std::to_string(h) + " image");
  return out;
}

void write_image(const std::string& path, const Tensor& img, const EncodeOptions& o) {
  std::vector<uint8_t> bytes;
  if (ends_with(path, ".png"))
    bytes = encode_png(img, o);
  else if (ends_with(path, ".jpg") || ends_with(path, ".jpeg"))
    bytes = encode_jpeg(img, o);
  else
    throw ImageError("[write_image] " + path + ": expected a .png, .jpg or .jpeg file name");
  store::write_file_atomic(path, {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

Tensor to_image_grid(const Tensor& batch, const GridOptions& o) {
  const char* op = "to_image_grid";
  EMBER_CHECK(batch.defined(), ValueError, op, "expected a tensor, found an undefined one");
  EMBER_CHECK(o.nrow > 0 && o.padding >= 0, ValueError, op,
              "expected nrow > 0 and padding >= 0, found nrow " + std::to_string(o.nrow) +
                  " and padding " + std::to_string(o.padding));
  Tensor x = batch;
  if (x.dim() == 2) x = x.unsqueeze(0);
  if (x.dim() == 3) x = x.unsqueeze(0);
  EMBER_CHECK(
      x.dim() == 4, ShapeError, op,
      "expected [N, C, H, W], [C, H, W] or [H, W], found shape " + shape_str(batch.shape()));
  if (x.size(1) == 1) x = cat({x, x, x}, 1);
  if (o.normalize) {
    EMBER_CHECK(is_floating(x.dtype()), DTypeError, op, "normalize needs a floating-point batch");
    auto norm = [&](const Tensor& t) {
      double lo, hi;
      if (o.value_range) {
        std::tie(lo, hi) = *o.value_range;
      } else {
        lo = t.min().item<double>(), hi = t.max().item<double>();
      }
      return (clamp(t, lo, hi) - lo) / std::max(hi - lo, 1e-5);
    };
    if (o.scale_each) {
      TensorList parts;
      for (int64_t i = 0; i < x.size(0); ++i) parts.push_back(norm(x.narrow(0, i, 1)));
      x = cat(parts, 0);
    } else {
      x = norm(x);
    }
  }
  if (x.size(0) == 1) return x.squeeze(0);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), p = o.padding;
  const int64_t cols = std::min(o.nrow, n), rows = (n + cols - 1) / cols;
  if (rows * cols > n) x = cat({x, full({rows * cols - n, c, h, w}, o.pad_value, x.options())}, 0);
  x = pad(x, {p, 0, p, 0}, "constant", o.pad_value);  // each image gets a top and left margin
  x = x.reshape({rows, cols, c, h + p, w + p}).permute({2, 0, 3, 1, 4});
  x = x.reshape({c, rows * (h + p), cols * (w + p)});
  return pad(x, {0, p, 0, p}, "constant", o.pad_value).contiguous();
}

void save_image_grid(const Tensor& batch, const std::string& path, const GridOptions& g,
                     const EncodeOptions& e) {
  EncodeOptions chw = e;
  chw.layout = Layout::Chw;
  write_image(path, to_image_grid(batch, g), chw);
}

}  // namespace ember::vision

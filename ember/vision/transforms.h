#pragma once
// Image transforms with fixed parameters (torchvision.transforms.functional): geometry, colour,
// blur, normalisation. Each takes images [..., C, H, W] (any number of leading batch dims;
// geometry also takes [H, W]), u8 or floating point, on any device, and returns the same dtype:
// u8 images are computed in f32 and rounded (or truncated) back exactly where torchvision does.
// The random transforms that draw these parameters live in ember/vision/augment.h.
#include <optional>
#include <vector>

#include "ember/tensor.h"

namespace ember::vision {

enum class Interpolation { Nearest, Bilinear, Bicubic };

struct ResizeOptions {
  Interpolation interpolation = Interpolation::Bilinear;
  /// Low-pass filter when shrinking (torchvision's antialias=True, transforms.v2's default);
  /// bilinear and bicubic only.
  bool antialias = true;
  /// With a one-value size: the longer side is capped at this.
  std::optional<int64_t> max_size = {};
};
/// To `size` = {h, w}, or {s}: the shorter side becomes s, keeping the aspect ratio.
Tensor resize(const Tensor& img, const Shape& size, const ResizeOptions& o = {});
/// The output size resize(img, size) gives an image of h x w ({h, w}).
Shape resize_output_size(int64_t h, int64_t w, const Shape& size,
                         std::optional<int64_t> max_size = {});

/// Rows [top, top + height) and columns [left, left + width); parts outside the image are zeros.
Tensor crop(const Tensor& img, int64_t top, int64_t left, int64_t height, int64_t width);
/// The centre {h, w} (or {s, s}); zero-padded first when the image is smaller.
Tensor center_crop(const Tensor& img, const Shape& size);
/// crop, then resize to `size` (torchvision's resized_crop).
Tensor resized_crop(const Tensor& img, int64_t top, int64_t left, int64_t height, int64_t width,
                    const Shape& size, const ResizeOptions& o = {});
Tensor hflip(const Tensor& img);
Tensor vflip(const Tensor& img);

enum class PadMode { Constant, Edge, Reflect, Symmetric };
/// padding: {all}, {left/right, top/bottom} or {left, top, right, bottom}; negative crops.
Tensor pad(const Tensor& img, const Shape& padding, double fill = 0,
           PadMode mode = PadMode::Constant);

struct AffineOptions {
  Interpolation interpolation = Interpolation::Nearest;  // nearest or bilinear
  /// Value(s) outside the image (one, or one per channel); empty: zeros without blending.
  std::optional<std::vector<double>> fill = {};
  /// Pivot in pixels from the top-left corner; default the image centre.
  std::optional<std::pair<double, double>> center = {};
};
/// Rotated `angle` degrees counter-clockwise; `expand` grows the output to hold it all.
Tensor rotate(const Tensor& img, double angle, bool expand = false, const AffineOptions& o = {});
/// Rotation (degrees), translation (pixels), scale and shear (degrees, x and y) about the
/// centre, as torchvision's affine.
Tensor affine(const Tensor& img, double angle, std::pair<double, double> translate, double scale,
              std::pair<double, double> shear, const AffineOptions& o = {});

/// (img - mean) / std per channel; floating-point images only.
Tensor normalize(const Tensor& img, const std::vector<double>& mean,
                 const std::vector<double>& std);
/// u8 <-> floating point with scaling by 255 (torchvision's convert_image_dtype), or a plain
/// cast when `scale` is false.
Tensor to_dtype(const Tensor& img, DType dtype, bool scale = true);

Tensor adjust_brightness(const Tensor& img, double factor);
Tensor adjust_contrast(const Tensor& img, double factor);
Tensor adjust_saturation(const Tensor& img, double factor);
/// factor in [-0.5, 0.5]: the hue shift as a fraction of the colour wheel.
Tensor adjust_hue(const Tensor& img, double factor);
/// ITU-R 601 luma of RGB images: [..., channels, H, W] with channels 1 or 3.
Tensor rgb_to_grayscale(const Tensor& img, int64_t channels = 1);
/// Gaussian blur with kernel {kx, ky} (odd) and sigma {sx, sy}; reflect padding.
Tensor gaussian_blur(const Tensor& img, const Shape& kernel, std::pair<double, double> sigma);
/// img with [top, top + h) x [left, left + w) set to `value` (broadcast; e.g. [C, 1, 1]).
Tensor erase(const Tensor& img, int64_t top, int64_t left, int64_t h, int64_t w,
             const Tensor& value);

}  // namespace ember::vision

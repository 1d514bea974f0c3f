#pragma once
// torchvision's ImageNet evaluation transform on an 8-bit RGB image, as a tensor pipeline:
// Resize(resize) of the shorter side (bilinear, no antialiasing: torchvision's tensor path),
// CenterCrop(crop), scaling to [0, 1] and Normalize with the ImageNet mean and std.
#include <ember/ember.h>

#include <cmath>
#include <cstdint>

namespace classify {

/// `pixels`: height x width x 3 bytes (stb_image's layout). Returns [1, 3, crop, crop] f32.
inline ember::Tensor preprocess(const uint8_t* pixels, int64_t height, int64_t width,
                                int64_t resize = 256, int64_t crop = 224) {
  using namespace ember;
  Tensor img = from_blob_copy(pixels, kU8, {height, width, 3}, kF32, Device::flex());
  img = (img.permute({2, 0, 1}) / 255.0).unsqueeze(0);
  // torchvision: the shorter side becomes `resize`, the longer int(resize * long / short).
  int64_t h = resize, w = resize;
  if (height < width) w = int64_t(double(resize) * double(width) / double(height));
  if (width < height) h = int64_t(double(resize) * double(height) / double(width));
  img = interpolate(img, {.size = {h, w}, .mode = "bilinear", .align_corners = false});
  // CenterCrop: offsets rounded half to even, as Python's round().
  int64_t top = int64_t(std::nearbyint(double(h - crop) / 2.0));
  int64_t left = int64_t(std::nearbyint(double(w - crop) / 2.0));
  img = img.narrow(2, top, crop).narrow(3, left, crop);
  Tensor mean = tensor(std::vector<float>{0.485f, 0.456f, 0.406f}, {1, 3, 1, 1}, {}, Device::flex());
  Tensor std = tensor(std::vector<float>{0.229f, 0.224f, 0.225f}, {1, 3, 1, 1}, {}, Device::flex());
  return ((img - mean) / std).contiguous();
}

}  // namespace classify

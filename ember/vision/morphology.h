#pragma once
// Grey and binary morphology (OpenCV's erode / dilate / morphologyEx semantics): structuring
// elements, erosion and dilation as registry ops with kernels of their own, and the compound
// operations built from them. Images are [..., H, W] of any dtype (bool: binary morphology).
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember::vision {

/// A structuring element's shape: cv2.MORPH_RECT, MORPH_CROSS, MORPH_ELLIPSE.
enum class MorphShape { Rect, Cross, Ellipse };
/// cv2.getStructuringElement(shape, (width, height)): a bool [height, width] element. `size` is
/// {height, width}; `anchor` {y, x} (default: the centre) places a cross's bars.
Tensor structuring_element(MorphShape shape, std::array<int64_t, 2> size,
                           std::optional<std::array<int64_t, 2>> anchor = {});

struct MorphOptions {
  /// {y, x} of the element's origin (default: {height / 2, width / 2}, OpenCV's centre).
  std::optional<std::array<int64_t, 2>> anchor;
  /// Pixels outside the image: "constant", "replicate" (scipy's "nearest"), "reflect"
  /// (fedcba|abcdef), "reflect_101" (scipy's "mirror": fedcb|abcdef) or "wrap".
  std::string border = "constant";
  /// The constant border's value; by default the operation's identity (the dtype's largest
  /// value for erode, its lowest for dilate), so the border never wins: OpenCV's default.
  std::optional<Scalar> border_value;
  int64_t iterations = 1;  // applied this many times
};

/// Minimum over the element's nonzero offsets: dst(y, x) = min src(y + i - ay, x + j - ax).
Tensor erode(const Tensor& image, const Tensor& element, const MorphOptions& o = {});
/// Maximum over the same offsets (not reflected, as OpenCV's dilate).
Tensor dilate(const Tensor& image, const Tensor& element, const MorphOptions& o = {});

/// cv2.morphologyEx's operations.
enum class MorphOp { Erode, Dilate, Open, Close, Gradient, TopHat, BlackHat };
/// open = dilate(erode), close = erode(dilate), gradient = dilate - erode, top-hat = image -
/// open, black-hat = close - image; `iterations` repeats each erosion and dilation.
Tensor morphology(const Tensor& image, MorphOp op, const Tensor& element,
                  const MorphOptions& o = {});

}  // namespace ember::vision

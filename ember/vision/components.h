#pragma once
// Connected-components labelling of binary images (scipy.ndimage.label's numbering, OpenCV's
// connectedComponentsWithStats's statistics).
#include <cstdint>

#include "ember/tensor.h"

namespace ember::vision {

/// Labels, per-label statistics and centroids of a binary image. Row 0 of `stats` and
/// `centroids` is the background (label 0), rows 1..count the components.
struct Components {
  Tensor labels;      // int32 [H, W]: 0 background, 1..count in raster order of first pixel
  Tensor stats;       // int64 [count + 1, 5]: left, top, width, height, area (cv2.CC_STAT_*)
  Tensor centroids;   // float64 [count + 1, 2]: mean x, mean y of each label's pixels
  int64_t count = 0;  // number of components (background excluded)
};

/// Labels the nonzero pixels of `image` [H, W] (any dtype) into components of 4- or 8-connected
/// pixels. Ids follow the raster order of each component's first pixel, as scipy.ndimage.label
/// and OpenCV's CCL_WU / CCL_SAUF give them (OpenCV's default block-based algorithm may number
/// the same components differently). A background without pixels (an all-foreground image) has a
/// zero stats row and NaN centroid. A sync point (the count is data).
Components connected_components(const Tensor& image, int connectivity = 8);

}  // namespace ember::vision

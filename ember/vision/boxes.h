#pragma once
// Box ops (torchvision.ops names and maths): areas, IoU matrices, format conversions, clipping,
// non-maximum suppression and roi_align. Boxes are [..., 4] tensors, (x1, y1, x2, y2) unless a
// format says otherwise. The matrices and conversions are ember ops (every backend, fusion and
// gradients); nms and roi_align are registry ops with kernels of their own.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ember/tensor.h"

namespace ember::vision {

/// Area of each box: [..., 4] -> [...].
Tensor box_area(const Tensor& boxes);
/// Pairwise intersection over union of boxes [N, 4] and [M, 4]: [N, M] (floating).
Tensor box_iou(const Tensor& a, const Tensor& b);
/// Pairwise generalized IoU (Rezatofighi et al. 2019): [N, M], in [-1, 1].
Tensor generalized_box_iou(const Tensor& a, const Tensor& b);
/// Pairwise distance IoU (Zheng et al. 2020): IoU minus the squared centre distance over the
/// squared diagonal of the enclosing box; `eps` keeps the ratio finite (torchvision's 1e-7).
Tensor distance_box_iou(const Tensor& a, const Tensor& b, double eps = 1e-7);
/// Pairwise complete IoU: distance IoU minus an aspect-ratio term (torchvision's).
Tensor complete_box_iou(const Tensor& a, const Tensor& b, double eps = 1e-7);
/// Converts boxes between formats "xyxy" (corners), "xywh" (corner + size) and "cxcywh"
/// (centre + size).
Tensor box_convert(const Tensor& boxes, std::string_view in_fmt, std::string_view out_fmt);
/// Clamps xyxy boxes into an image of size {height, width}.
Tensor clip_boxes_to_image(const Tensor& boxes, std::array<int64_t, 2> size);
/// The smallest xyxy box (float32, inclusive pixel coordinates) around each mask [N, H, W] (any
/// dtype, nonzero = inside): [N, 4]. An empty mask gives [0, 0, 0, 0] (torchvision raises).
Tensor masks_to_boxes(const Tensor& masks);
/// Indices (int64) of the boxes whose width and height are both at least `min_size`.
Tensor remove_small_boxes(const Tensor& boxes, double min_size);

struct NmsOptions {
  double iou_threshold = 0.5;  // a box whose IoU with a kept box is above this is dropped
  std::optional<double> score_threshold;  // boxes scoring at most this are dropped first
  int64_t top_k = -1;                     // keep at most this many (-1: all)
};
/// Non-maximum suppression: indices (int64) of the kept boxes [N, 4] in decreasing score [N]
/// order (ties: lower index first), torchvision.ops.nms's result. A sync point (the count of
/// kept boxes is data).
Tensor nms(const Tensor& boxes, const Tensor& scores, const NmsOptions& o = {});
/// NMS within each category of `idxs` [N] (integer): boxes of different categories never
/// suppress each other; the kept indices of every category, in decreasing score order.
Tensor batched_nms(const Tensor& boxes, const Tensor& scores, const Tensor& idxs,
                   const NmsOptions& o = {});

struct RoiAlignOptions {
  std::array<int64_t, 2> output_size{1, 1};  // {height, width} of each pooled region
  double spatial_scale = 1.0;   // maps box coordinates to the input's (1 / feature stride)
  int64_t sampling_ratio = -1;  // samples per bin side (<= 0: ceil(roi size / output size))
  bool aligned = false;         // true: pixel centres at +0.5 (torchvision's aligned=True)
};
/// torchvision.ops.roi_align: input [N, C, H, W], rois [K, 5] (batch index, x1, y1, x2, y2)
/// -> [K, C, out_h, out_w], each cell the mean of bilinear samples of its bin. Differentiable in
/// the input.
Tensor roi_align(const Tensor& input, const Tensor& rois, const RoiAlignOptions& o = {});

}  // namespace ember::vision

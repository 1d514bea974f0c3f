#pragma once
// Sampling an image at arbitrary points: grid_sample and affine_grid, with
// torch.nn.functional's semantics. Composites of ember ops (gathers and elementwise maths), so
// they run on every device, fuse, and have gradients for the input (and, through the
// interpolation weights, for the grid) wherever those ops do.
#include <string>

#include "ember/tensor.h"

namespace ember::vision {

struct GridSampleOptions {
  std::string mode = "bilinear";       // "bilinear", "nearest", "bicubic"
  std::string padding_mode = "zeros";  // "zeros", "border", "reflection"
  bool align_corners = false;
};
/// input [N, C, H, W] sampled at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]) -> [N, C, Ho, Wo].
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleOptions& o = {});
/// The sampling grid [N, H, W, 2] of the affine maps theta [N, 2, 3] for an output of size
/// [N, C, H, W] (torch.nn.functional.affine_grid).
Tensor affine_grid(const Tensor& theta, const Shape& size, bool align_corners = false);

}  // namespace ember::vision

#pragma once
// MobileNetV2 (Sandler et al.) with torchvision's module names: features.0 (a
// Conv2dNormActivation), features.1..17 (InvertedResidual, its layers under "conv"),
// features.18, classifier.1 (Linear after a Dropout).
#include <memory>
#include <string>

#include "ember/nn/blocks.h"
#include "ember/nn/layers.h"

namespace ember::models {

struct MobileNetV2Config {
  int64_t num_classes = 1000;
  double width_mult = 1.0;    // channel multiplier, rounded to multiples of round_nearest
  int64_t round_nearest = 8;
  double dropout = 0.2;
  nn::ParamOptions param = {};
};

/// torchvision's _make_divisible: `v` rounded to the nearest multiple of `divisor` (at least
/// `divisor`, and never below 90% of v).
int64_t make_divisible(double v, int64_t divisor);

/// 1x1 expansion (unless expand_ratio is 1), 3x3 depthwise, 1x1 linear projection; a skip
/// connection when the stride is 1 and the channels match.
class InvertedResidual : public nn::Module {
 public:
  InvertedResidual(int64_t in, int64_t out, int64_t stride, int64_t expand_ratio,
                   const nn::ParamOptions& param = {});
  Tensor forward(const Tensor& x) override;
  nn::Sequential conv;
  const bool use_res_connect;
};

class MobileNetV2 : public nn::Module {
 public:
  explicit MobileNetV2(const MobileNetV2Config& c = {});
  Tensor forward(const Tensor& x) override;
  /// The pooled features [N, last_channel] the classifier reads.
  Tensor features_of(const Tensor& x);
  /// A model in eval mode with the weights of `path` (a file or folder, as ResNet's); the
  /// folder's config.json (num_classes, width_mult) overrides `c`, else num_classes is the
  /// checkpoint's.
  static std::shared_ptr<MobileNetV2> from_pretrained(const std::string& path,
                                                      MobileNetV2Config c = {});
  nn::Sequential features;
  nn::Sequential classifier;
  const MobileNetV2Config config;
  const int64_t last_channel;
};

std::shared_ptr<MobileNetV2> mobilenet_v2(const MobileNetV2Config& c = {});

}  // namespace ember::models

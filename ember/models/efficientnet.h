#pragma once
// EfficientNet-B0 (Tan & Le) with torchvision's module names: features.0 (stem),
// features.1..7 (stages of MBConv, each "block" with squeeze-excitation and "stochastic_depth"),
// features.8 (head conv), classifier.1.
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/blocks.h"
#include "ember/nn/layers.h"

namespace ember::models {

/// One stage of MBConv blocks, before width and depth scaling.
struct MBConvStage {
  int64_t expand_ratio, kernel, stride, in, out, layers;
};

struct EfficientNetConfig {
  int64_t num_classes = 1000;
  double width_mult = 1.0, depth_mult = 1.0;  // B0: 1.0, 1.0
  double dropout = 0.2;
  double stochastic_depth_prob = 0.2;  // grows linearly over the blocks up to this
  double norm_eps = 1e-5, norm_momentum = 0.1;
  std::vector<MBConvStage> stages = {{1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},
                                     {6, 5, 2, 24, 40, 2},  {6, 3, 2, 40, 80, 3},
                                     {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4},
                                     {6, 3, 1, 192, 320, 1}};
  nn::ParamOptions param = {};
};

/// Mobile inverted bottleneck: expand (1x1), depthwise (k x k), squeeze-excitation, project;
/// a skip connection (through stochastic depth) when the stride is 1 and the channels match.
class MBConv : public nn::Module {
 public:
  MBConv(const MBConvStage& s, double sd_prob, const EfficientNetConfig& c);
  Tensor forward(const Tensor& x) override;
  nn::Sequential block;
  nn::StochasticDepth stochastic_depth;
  const bool use_res_connect;
};

class EfficientNet : public nn::Module {
 public:
  explicit EfficientNet(const EfficientNetConfig& c = {});
  Tensor forward(const Tensor& x) override;
  /// The pooled features the classifier reads.
  Tensor features_of(const Tensor& x);
  /// A model in eval mode with the weights of `path` (a file or folder, as ResNet's).
  static std::shared_ptr<EfficientNet> from_pretrained(const std::string& path,
                                                       EfficientNetConfig c = {});
  nn::Sequential features;
  nn::AdaptiveAvgPool2d avgpool;
  nn::Sequential classifier;
  const EfficientNetConfig config;
};

std::shared_ptr<EfficientNet> efficientnet_b0(const EfficientNetConfig& c = {});

}  // namespace ember::models

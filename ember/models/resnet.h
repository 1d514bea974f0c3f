#pragma once
// ResNet (He et al.) with torchvision's module names: conv1, bn1, layer1..layer4 of BasicBlock or
// Bottleneck (conv1, bn1, conv2, bn2[, conv3, bn3], downsample.0/1), fc. state_dict() keys equal
// torchvision's, so its checkpoints load unchanged.
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/container.h"
#include "ember/nn/conv.h"
#include "ember/nn/layers.h"
#include "ember/nn/norm.h"
#include "ember/nn/pool.h"

namespace ember::models {

struct ResNetConfig {
  std::vector<int64_t> layers = {2, 2, 2, 2};  // blocks per stage
  bool bottleneck = false;                     // Bottleneck blocks (ResNet-50 and deeper)
  int64_t num_classes = 1000;
  /// Channels of the stem and of the first stage's planes (doubled every stage); torchvision
  /// fixes 64. A smaller width gives a narrow variant with the same key names.
  int64_t width = 64;
  int64_t groups = 1, width_per_group = 64;  // ResNeXt / wide ResNet (Bottleneck only)
  /// Zero the last batch norm of each block, so each block starts as the identity.
  bool zero_init_residual = false;
  nn::ParamOptions param = {};
};

/// Two 3x3 convolutions with a skip connection (expansion 1).
class BasicBlock : public nn::Module {
 public:
  BasicBlock(int64_t in, int64_t planes, int64_t stride, const ResNetConfig& c);
  Tensor forward(const Tensor& x) override;
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  std::shared_ptr<nn::Sequential> downsample;  // null when the skip is the identity
};

/// 1x1 reduce, 3x3 (stride, groups), 1x1 expand to 4 * planes, with a skip connection.
class Bottleneck : public nn::Module {
 public:
  Bottleneck(int64_t in, int64_t planes, int64_t stride, const ResNetConfig& c);
  Tensor forward(const Tensor& x) override;
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d conv3;
  nn::BatchNorm2d bn3;
  std::shared_ptr<nn::Sequential> downsample;
};

class ResNet : public nn::Module {
 public:
  explicit ResNet(const ResNetConfig& c = {});
  /// Logits [N, num_classes] of images [N, 3, H, W].
  Tensor forward(const Tensor& x) override;
  /// The pooled features [N, C] that fc reads (C = 8 * width * expansion).
  Tensor features(const Tensor& x);
  /// A model in eval mode with the weights of `path`: a .pt/.pth/.bin or .safetensors file, or a
  /// folder (config.json + weights, see models::load_checkpoint). The folder's config.json
  /// (architecture, num_classes, width) overrides `c`; else num_classes is the checkpoint fc's.
  static std::shared_ptr<ResNet> from_pretrained(const std::string& path, ResNetConfig c = {});
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::MaxPool2d maxpool;
  nn::Sequential layer1, layer2, layer3, layer4;
  nn::AdaptiveAvgPool2d avgpool;
  nn::Linear fc;
  const ResNetConfig config;
};

/// torchvision's depths: the config's layers and block kind are set, the rest kept.
std::shared_ptr<ResNet> resnet18(ResNetConfig c = {});
std::shared_ptr<ResNet> resnet34(ResNetConfig c = {});
std::shared_ptr<ResNet> resnet50(ResNetConfig c = {});
std::shared_ptr<ResNet> resnet101(ResNetConfig c = {});
/// The config of a torchvision name ("resnet18", "resnet34", "resnet50", "resnet101",
/// "resnet152", "resnext50_32x4d", "wide_resnet50_2"); ValueError for another.
ResNetConfig resnet_config(const std::string& name, ResNetConfig c = {});

}  // namespace ember::models

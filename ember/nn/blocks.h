#pragma once
// torchvision's building blocks (torchvision.ops.misc and .stochastic_depth), with its module
// names so that the zoo's checkpoints load by key: Conv2dNormActivation (a Sequential of conv
// "0", batch norm "1" and an activation), SqueezeExcitation (fc1, fc2) and StochasticDepth.
#include <memory>
#include <optional>
#include <string>

#include "ember/nn/container.h"
#include "ember/nn/conv.h"

namespace ember::nn {

struct Conv2dNormActivationOptions {
  int64_t in = 0, out = 0;
  int64_t kernel = 3, stride = 1;
  std::optional<int64_t> padding;  // unset: (kernel - 1) / 2 * dilation, as torchvision
  int64_t groups = 1, dilation = 1;
  /// "relu", "relu6", "silu", "hardswish", "sigmoid" or "" (none).
  std::string activation = "relu";
  bool norm = true;         // a BatchNorm2d after the conv (the conv then has no bias)
  double norm_eps = 1e-5;   // the batch norm's eps and momentum
  double norm_momentum = 0.1;
  ParamOptions param = {};
};
/// conv -> BatchNorm2d -> activation, keys "0.weight", "1.running_mean", ...
class Conv2dNormActivation : public Sequential {
 public:
  EMBER_MODULE_ARROW(Conv2dNormActivation)
  explicit Conv2dNormActivation(const Conv2dNormActivationOptions& o);
  std::string type_name() const override { return "Conv2dNormActivation"; }
  std::shared_ptr<Module> clone() const override;
  const Conv2dNormActivationOptions options;
};

/// An activation module by name (see Conv2dNormActivationOptions); nullptr for "".
std::shared_ptr<Module> make_activation(const std::string& name);

struct SqueezeExcitationOptions {
  int64_t channels = 0, squeeze_channels = 0;
  std::string activation = "relu";          // after fc1
  std::string scale_activation = "sigmoid";  // after fc2
  ParamOptions param = {};
};
/// x * scale_activation(fc2(activation(fc1(mean over H, W of x)))), fc1/fc2 1x1 convolutions.
class SqueezeExcitation : public Module {
 public:
  EMBER_MODULE_ARROW(SqueezeExcitation)
  explicit SqueezeExcitation(const SqueezeExcitationOptions& o);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;
  Conv2d fc1, fc2;
  const SqueezeExcitationOptions options;

 private:
  std::shared_ptr<Module> activation_, scale_activation_;
};

/// Drops whole residual branches in training mode (Huang et al., torchvision's StochasticDepth):
/// mode "row" zeroes each sample with probability p, "batch" the whole batch, and scales the
/// kept ones by 1 / (1 - p). The identity in eval mode or with p = 0.
class StochasticDepth : public Module {
 public:
  EMBER_MODULE_ARROW(StochasticDepth)
  explicit StochasticDepth(double p, std::string mode = "row");
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double p;
  const std::string mode;
};

}  // namespace ember::nn

// EfficientNet-B0 with torchvision's module names, channel rounding and forward.
#include "ember/models/efficientnet.h"

#include <cmath>

#include "ember/error.h"
#include "ember/models/checkpoint.h"
#include "ember/models/mobilenet.h"
#include "ember/models/vision_config.h"
#include "ember/ops/binary.h"
#include "ember/ops/layout.h"

namespace ember::models {

namespace {

int64_t channels(int64_t c, const EfficientNetConfig& cfg) {
  return make_divisible(double(c) * cfg.width_mult, 8);
}

nn::Conv2dNormActivationOptions cna(int64_t in, int64_t out, int64_t k, int64_t stride,
                                    int64_t groups, std::string act, const EfficientNetConfig& c) {
  return {.in = in,
          .out = out,
          .kernel = k,
          .stride = stride,
          .groups = groups,
          .activation = std::move(act),
          .norm_eps = c.norm_eps,
          .norm_momentum = c.norm_momentum,
          .param = c.param};
}

}  // namespace

MBConv::MBConv(const MBConvStage& s, double sd_prob, const EfficientNetConfig& c)
    : stochastic_depth(sd_prob, "row"), use_res_connect(s.stride == 1 && s.in == s.out) {
  int64_t expanded = make_divisible(double(s.in) * double(s.expand_ratio), 8);
  if (expanded != s.in)
    block.push_back(
        std::make_shared<nn::Conv2dNormActivation>(cna(s.in, expanded, 1, 1, 1, "silu", c)));
  block.push_back(std::make_shared<nn::Conv2dNormActivation>(
      cna(expanded, expanded, s.kernel, s.stride, expanded, "silu", c)));
  block.push_back(std::make_shared<nn::SqueezeExcitation>(
      nn::SqueezeExcitationOptions{.channels = expanded,
                                   .squeeze_channels = std::max<int64_t>(1, s.in / 4),
                                   .activation = "silu",
                                   .param = c.param}));
  block.push_back(
      std::make_shared<nn::Conv2dNormActivation>(cna(expanded, s.out, 1, 1, 1, "", c)));
  register_modules({{"block", block}, {"stochastic_depth", stochastic_depth}});
}

Tensor MBConv::forward(const Tensor& x) {
  Tensor y = block(x);
  return use_res_connect ? stochastic_depth(y) + x : y;
}

EfficientNet::EfficientNet(const EfficientNetConfig& c) : avgpool(1), config(c) {
  if (c.stages.empty() || c.num_classes <= 0)
    detail::throw_value("EfficientNet", "needs at least one stage and a positive num_classes");
  // Scaled stages: torchvision's MBConvConfig rounds channels and ceils depths.
  std::vector<MBConvStage> stages = c.stages;
  int64_t total = 0;
  for (auto& s : stages) {
    s.in = channels(s.in, c);
    s.out = channels(s.out, c);
    s.layers = int64_t(std::ceil(double(s.layers) * c.depth_mult));
    total += s.layers;
  }
  features.push_back(
      std::make_shared<nn::Conv2dNormActivation>(cna(3, stages[0].in, 3, 2, 1, "silu", c)));
  int64_t id = 0;
  for (const auto& s : stages) {
    auto stage = std::make_shared<nn::Sequential>();
    for (int64_t i = 0; i < s.layers; ++i, ++id) {
      MBConvStage b = s;
      if (i > 0) {
        b.in = b.out;
        b.stride = 1;
      }
      stage->push_back(
          std::make_shared<MBConv>(b, c.stochastic_depth_prob * double(id) / double(total), c));
    }
    features.push_back(std::move(stage));
  }
  int64_t last_in = stages.back().out, last = 4 * last_in;
  features.push_back(
      std::make_shared<nn::Conv2dNormActivation>(cna(last_in, last, 1, 1, 1, "silu", c)));
  classifier.push_back(std::make_shared<nn::Dropout>(c.dropout));
  classifier.push_back(std::make_shared<nn::Linear>(
      nn::LinearOptions{.in = last, .out = c.num_classes, .param = c.param}));
  register_modules({{"features", features}, {"avgpool", avgpool}, {"classifier", classifier}});
}

Tensor EfficientNet::features_of(const Tensor& x) { return flatten(avgpool(features(x)), 1); }

Tensor EfficientNet::forward(const Tensor& x) { return classifier(features_of(x)); }

std::shared_ptr<EfficientNet> EfficientNet::from_pretrained(const std::string& path,
                                                            EfficientNetConfig c) {
  VisionConfig vc = read_vision_config(path);
  if (vc.width_mult) c.width_mult = *vc.width_mult;
  if (vc.num_classes) c.num_classes = *vc.num_classes;
  else if (int64_t n = head_classes(path, "classifier.1.weight")) c.num_classes = n;
  auto m = std::make_shared<EfficientNet>(c);
  load_checkpoint(*m, path);
  m->eval();
  return m;
}

std::shared_ptr<EfficientNet> efficientnet_b0(const EfficientNetConfig& c) {
  return std::make_shared<EfficientNet>(c);
}

}  // namespace ember::models

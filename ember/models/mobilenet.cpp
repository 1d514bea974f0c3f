// MobileNetV2 with torchvision's module names, widths and forward.
#include "ember/models/mobilenet.h"

#include <algorithm>

#include "ember/error.h"
#include "ember/models/checkpoint.h"
#include "ember/models/vision_config.h"
#include "ember/nn/norm.h"
#include "ember/ops/binary.h"
#include "ember/ops/layout.h"
#include "ember/ops/nn.h"

namespace ember::models {

int64_t make_divisible(double v, int64_t divisor) {
  int64_t n = std::max<int64_t>(divisor, int64_t(v + double(divisor) / 2) / divisor * divisor);
  if (double(n) < 0.9 * v) n += divisor;
  return n;
}

InvertedResidual::InvertedResidual(int64_t in, int64_t out, int64_t stride, int64_t expand_ratio,
                                   const nn::ParamOptions& param)
    : use_res_connect(stride == 1 && in == out) {
  int64_t hidden = in * expand_ratio;
  if (expand_ratio != 1)
    conv.push_back(std::make_shared<nn::Conv2dNormActivation>(nn::Conv2dNormActivationOptions{
        .in = in, .out = hidden, .kernel = 1, .activation = "relu6", .param = param}));
  conv.push_back(std::make_shared<nn::Conv2dNormActivation>(
      nn::Conv2dNormActivationOptions{.in = hidden,
                                      .out = hidden,
                                      .kernel = 3,
                                      .stride = stride,
                                      .groups = hidden,
                                      .activation = "relu6",
                                      .param = param}));
  conv.push_back(std::make_shared<nn::Conv2d>(
      nn::ConvOptions{.in = hidden, .out = out, .kernel = 1, .bias = false, .param = param}));
  conv.push_back(
      std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions{.features = out, .param = param}));
  register_module("conv", conv);
}

Tensor InvertedResidual::forward(const Tensor& x) {
  Tensor y = conv(x);
  return use_res_connect ? x + y : y;
}

MobileNetV2::MobileNetV2(const MobileNetV2Config& c)
    : config(c),
      last_channel(make_divisible(1280 * std::max(1.0, c.width_mult), c.round_nearest)) {
  if (c.num_classes <= 0 || c.width_mult <= 0)
    detail::throw_value("MobileNetV2", "num_classes and width_mult must be positive");
  // t (expansion), c (channels), n (blocks), s (first stride): the paper's table 2.
  static constexpr int64_t kSetting[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2},
                                             {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2},
                                             {6, 320, 1, 1}};
  int64_t in = make_divisible(32 * c.width_mult, c.round_nearest);
  features.push_back(std::make_shared<nn::Conv2dNormActivation>(nn::Conv2dNormActivationOptions{
      .in = 3, .out = in, .kernel = 3, .stride = 2, .activation = "relu6", .param = c.param}));
  for (const auto& s : kSetting) {
    int64_t out = make_divisible(double(s[1]) * c.width_mult, c.round_nearest);
    for (int64_t i = 0; i < s[2]; ++i) {
      features.push_back(
          std::make_shared<InvertedResidual>(in, out, i == 0 ? s[3] : 1, s[0], c.param));
      in = out;
    }
  }
  features.push_back(std::make_shared<nn::Conv2dNormActivation>(nn::Conv2dNormActivationOptions{
      .in = in, .out = last_channel, .kernel = 1, .activation = "relu6", .param = c.param}));
  classifier.push_back(std::make_shared<nn::Dropout>(c.dropout));
  classifier.push_back(std::make_shared<nn::Linear>(
      nn::LinearOptions{.in = last_channel, .out = c.num_classes, .param = c.param}));
  register_modules({{"features", features}, {"classifier", classifier}});
}

Tensor MobileNetV2::features_of(const Tensor& x) {
  return flatten(adaptive_avg_pool2d(features(x), {1, 1}), 1);
}

Tensor MobileNetV2::forward(const Tensor& x) { return classifier(features_of(x)); }

std::shared_ptr<MobileNetV2> MobileNetV2::from_pretrained(const std::string& path,
                                                          MobileNetV2Config c) {
  VisionConfig vc = read_vision_config(path);
  if (vc.width_mult) c.width_mult = *vc.width_mult;
  if (vc.num_classes) c.num_classes = *vc.num_classes;
  else if (int64_t n = head_classes(path, "classifier.1.weight")) c.num_classes = n;
  auto m = std::make_shared<MobileNetV2>(c);
  load_checkpoint(*m, path);
  m->eval();
  return m;
}

std::shared_ptr<MobileNetV2> mobilenet_v2(const MobileNetV2Config& c) {
  return std::make_shared<MobileNetV2>(c);
}

}  // namespace ember::models

// ResNet-18/34/50/101 with torchvision's module names and forward.
#include "ember/models/resnet.h"

#include "ember/error.h"
#include "ember/models/checkpoint.h"
#include "ember/models/vision_config.h"
#include "ember/nn/init.h"
#include "ember/ops/binary.h"
#include "ember/ops/layout.h"
#include "ember/ops/unary.h"

namespace ember::models {

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t groups,
                const ResNetConfig& c) {
  return nn::Conv2d({.in = in,
                     .out = out,
                     .kernel = k,
                     .stride = stride,
                     .padding = k / 2,
                     .groups = groups,
                     .bias = false,
                     .param = c.param});
}

nn::BatchNorm2d bn(int64_t n, const ResNetConfig& c) {
  return nn::BatchNorm2d({.features = n, .param = c.param});
}

// torchvision's downsample: a strided 1x1 conv and a batch norm, when the skip changes shape.
std::shared_ptr<nn::Sequential> downsample(int64_t in, int64_t out, int64_t stride,
                                           const ResNetConfig& c) {
  if (stride == 1 && in == out) return nullptr;
  auto s = std::make_shared<nn::Sequential>();
  s->push_back(std::make_shared<nn::Conv2d>(nn::ConvOptions{
      .in = in, .out = out, .kernel = 1, .stride = stride, .bias = false, .param = c.param}));
  s->push_back(std::make_shared<nn::BatchNorm2d>(nn::BatchNormOptions{.features = out, .param = c.param}));
  return s;
}

int64_t expansion(const ResNetConfig& c) { return c.bottleneck ? 4 : 1; }

}  // namespace

BasicBlock::BasicBlock(int64_t in, int64_t planes, int64_t stride, const ResNetConfig& c)
    : conv1(conv(in, planes, 3, stride, 1, c)),
      bn1(bn(planes, c)),
      conv2(conv(planes, planes, 3, 1, 1, c)),
      bn2(bn(planes, c)),
      downsample(models::downsample(in, planes, stride, c)) {
  register_modules({{"conv1", conv1}, {"bn1", bn1}, {"conv2", conv2}, {"bn2", bn2}});
  if (downsample) register_module("downsample", downsample);
  if (c.zero_init_residual) nn::init::zeros_(bn2.weight);
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor y = bn2(conv2(relu(bn1(conv1(x)))));
  return relu(y + (downsample ? downsample->forward(x) : x));
}

Bottleneck::Bottleneck(int64_t in, int64_t planes, int64_t stride, const ResNetConfig& c)
    : conv1(conv(in, planes * c.width_per_group / 64 * c.groups, 1, 1, 1, c)),
      bn1(bn(conv1.options.out, c)),
      conv2(conv(conv1.options.out, conv1.options.out, 3, stride, c.groups, c)),
      bn2(bn(conv1.options.out, c)),
      conv3(conv(conv1.options.out, planes * 4, 1, 1, 1, c)),
      bn3(bn(planes * 4, c)),
      downsample(models::downsample(in, planes * 4, stride, c)) {
  register_modules({{"conv1", conv1}, {"bn1", bn1}, {"conv2", conv2}, {"bn2", bn2},
                    {"conv3", conv3}, {"bn3", bn3}});
  if (downsample) register_module("downsample", downsample);
  if (c.zero_init_residual) nn::init::zeros_(bn3.weight);
}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor y = relu(bn1(conv1(x)));
  y = bn3(conv3(relu(bn2(conv2(y)))));
  return relu(y + (downsample ? downsample->forward(x) : x));
}

ResNet::ResNet(const ResNetConfig& c)
    : conv1(nn::Conv2d({.in = 3,
                        .out = c.width,
                        .kernel = 7,
                        .stride = 2,
                        .padding = 3,
                        .bias = false,
                        .param = c.param})),
      bn1(bn(c.width, c)),
      maxpool({.kernel = 3, .stride = 2, .padding = 1}),
      avgpool(1),
      fc({.in = c.width * 8 * expansion(c), .out = c.num_classes, .param = c.param}),
      config(c) {
  if (c.layers.size() != 4)
    detail::throw_value("ResNet", "layers must give 4 stage depths, found " +
                                      std::to_string(c.layers.size()));
  if (c.num_classes <= 0 || c.width <= 0)
    detail::throw_value("ResNet", "num_classes and width must be positive");
  int64_t in = c.width;
  nn::Sequential* stages[4] = {&layer1, &layer2, &layer3, &layer4};
  for (int s = 0; s < 4; ++s) {
    int64_t planes = c.width << s;
    for (int64_t b = 0; b < c.layers[s]; ++b) {
      int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      if (c.bottleneck)
        stages[s]->push_back(std::make_shared<Bottleneck>(in, planes, stride, c));
      else
        stages[s]->push_back(std::make_shared<BasicBlock>(in, planes, stride, c));
      in = planes * expansion(c);
    }
  }
  register_modules({{"conv1", conv1}, {"bn1", bn1}, {"maxpool", maxpool}, {"layer1", layer1},
                    {"layer2", layer2}, {"layer3", layer3}, {"layer4", layer4},
                    {"avgpool", avgpool}, {"fc", fc}});
}

Tensor ResNet::features(const Tensor& x) {
  Tensor y = maxpool(relu(bn1(conv1(x))));
  y = layer4(layer3(layer2(layer1(y))));
  return flatten(avgpool(y), 1);
}

Tensor ResNet::forward(const Tensor& x) { return fc(features(x)); }

std::shared_ptr<ResNet> ResNet::from_pretrained(const std::string& path, ResNetConfig c) {
  VisionConfig vc = read_vision_config(path);
  if (vc.width) c.width = *vc.width;
  if (vc.num_classes) c.num_classes = *vc.num_classes;
  if (!vc.architecture.empty()) c = resnet_config(vc.architecture, c);
  else if (int64_t n = head_classes(path, "fc.weight")) c.num_classes = n;
  auto m = std::make_shared<ResNet>(c);
  load_checkpoint(*m, path);
  m->eval();
  return m;
}

ResNetConfig resnet_config(const std::string& name, ResNetConfig c) {
  c.bottleneck = true;
  if (name == "resnet18") {
    c.layers = {2, 2, 2, 2};
    c.bottleneck = false;
  } else if (name == "resnet34") {
    c.layers = {3, 4, 6, 3};
    c.bottleneck = false;
  } else if (name == "resnet50") {
    c.layers = {3, 4, 6, 3};
  } else if (name == "resnet101") {
    c.layers = {3, 4, 23, 3};
  } else if (name == "resnet152") {
    c.layers = {3, 8, 36, 3};
  } else if (name == "resnext50_32x4d") {
    c.layers = {3, 4, 6, 3};
    c.groups = 32;
    c.width_per_group = 4;
  } else if (name == "wide_resnet50_2") {
    c.layers = {3, 4, 6, 3};
    c.width_per_group = 128;
  } else {
    detail::throw_value("resnet_config", "unknown ResNet '" + name +
                                             "' (resnet18, resnet34, resnet50, resnet101, "
                                             "resnet152, resnext50_32x4d, wide_resnet50_2)");
  }
  return c;
}

std::shared_ptr<ResNet> resnet18(ResNetConfig c) {
  return std::make_shared<ResNet>(resnet_config("resnet18", c));
}
std::shared_ptr<ResNet> resnet34(ResNetConfig c) {
  return std::make_shared<ResNet>(resnet_config("resnet34", c));
}
std::shared_ptr<ResNet> resnet50(ResNetConfig c) {
  return std::make_shared<ResNet>(resnet_config("resnet50", c));
}
std::shared_ptr<ResNet> resnet101(ResNetConfig c) {
  return std::make_shared<ResNet>(resnet_config("resnet101", c));
}

}  // namespace ember::models

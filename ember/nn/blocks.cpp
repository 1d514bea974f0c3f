// torchvision's building blocks: Conv2dNormActivation, SqueezeExcitation, StochasticDepth.
#include "ember/nn/blocks.h"

#include "ember/error.h"
#include "ember/nn/activation.h"
#include "ember/nn/norm.h"
#include "ember/nn/repr.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"

namespace ember::nn {

std::shared_ptr<Module> make_activation(const std::string& name) {
  if (name.empty()) return nullptr;
  if (name == "relu") return std::make_shared<ReLU>();
  if (name == "relu6") return std::make_shared<ReLU6>();
  if (name == "silu") return std::make_shared<SiLU>();
  if (name == "hardswish") return std::make_shared<Hardswish>();
  if (name == "hardsigmoid") return std::make_shared<Hardsigmoid>();
  if (name == "sigmoid") return std::make_shared<Sigmoid>();
  if (name == "gelu") return std::make_shared<GELU>();
  if (name == "tanh") return std::make_shared<Tanh>();
  detail::throw_value("make_activation",
                      "unknown activation '" + name +
                          "' (relu, relu6, silu, hardswish, hardsigmoid, sigmoid, gelu, tanh "
                          "or empty for none)");
}

Conv2dNormActivation::Conv2dNormActivation(const Conv2dNormActivationOptions& o) : options(o) {
  int64_t pad = o.padding.value_or((o.kernel - 1) / 2 * o.dilation);
  push_back(std::make_shared<Conv2d>(ConvOptions{.in = o.in,
                                                 .out = o.out,
                                                 .kernel = o.kernel,
                                                 .stride = o.stride,
                                                 .padding = pad,
                                                 .dilation = o.dilation,
                                                 .groups = o.groups,
                                                 .bias = !o.norm,
                                                 .param = o.param}));
  if (o.norm)
    push_back(std::make_shared<BatchNorm2d>(BatchNormOptions{
        .features = o.out, .eps = o.norm_eps, .momentum = o.norm_momentum, .param = o.param}));
  if (auto act = make_activation(o.activation)) push_back(std::move(act));
}

std::shared_ptr<Module> Conv2dNormActivation::clone() const {
  auto c = std::make_shared<Conv2dNormActivation>(options);
  c->copy_state_from(*this);
  c->train(is_training());
  return c;
}

SqueezeExcitation::SqueezeExcitation(const SqueezeExcitationOptions& o)
    : fc1({.in = o.channels, .out = o.squeeze_channels, .kernel = 1, .param = o.param}),
      fc2({.in = o.squeeze_channels, .out = o.channels, .kernel = 1, .param = o.param}),
      options(o),
      activation_(make_activation(o.activation)),
      scale_activation_(make_activation(o.scale_activation)) {
  register_modules({{"fc1", fc1}, {"fc2", fc2}});
}

Tensor SqueezeExcitation::forward(const Tensor& x) {
  Tensor s = fc1(mean(x, {-2, -1}, /*keepdim=*/true));
  if (activation_) s = activation_->forward(s);
  s = fc2(s);
  if (scale_activation_) s = scale_activation_->forward(s);
  return s * x;
}

std::shared_ptr<Module> SqueezeExcitation::clone() const {
  auto c = std::make_shared<SqueezeExcitation>(options);
  c->copy_state_from(*this);
  c->train(is_training());
  return c;
}

StochasticDepth::StochasticDepth(double p, std::string mode) : p(p), mode(std::move(mode)) {
  if (p < 0 || p > 1)
    detail::throw_value("StochasticDepth", "p must be in [0, 1], found " + fmt::py_float(p));
  if (this->mode != "row" && this->mode != "batch")
    detail::throw_value("StochasticDepth", "mode must be 'row' or 'batch', found '" + this->mode + "'");
}

Tensor StochasticDepth::forward(const Tensor& x) {
  if (!is_training() || p == 0.0) return x;
  Shape shape(x.dim(), 1);
  if (mode == "row" && x.dim() > 0) shape[0] = x.shape()[0];
  Tensor keep = bernoulli(zeros(shape, {.dtype = x.dtype(), .device = x.device()}), 1.0 - p);
  if (p < 1.0) keep = keep / (1.0 - p);
  return x * keep;
}

std::string StochasticDepth::extra_repr() const {
  return "p=" + fmt::py_float(p) + ", mode=" + mode;
}

std::shared_ptr<Module> StochasticDepth::clone() const {
  auto c = std::make_shared<StochasticDepth>(p, mode);
  c->train(is_training());
  return c;
}

}  // namespace ember::nn

#pragma once
// The Fashion-MNIST CNN of the README demo (examples/fashion_mnist): two 3x3 conv + ReLU + 2x2
// max-pool blocks, then two linear layers. Input [N, 1, 28, 28] in 0..1, output [N, 10] logits.
// examples/fashion_mnist/reference.py is the same model in PyTorch, with the same state_dict keys
// (conv1, conv2, fc1, fc2). Header-only, on ember::nn alone: the C ABI (ember_model_fashion_cnn),
// the WebAssembly build, the examples and the benchmarks share this one definition.
#include "ember/nn/conv.h"
#include "ember/nn/functional.h"
#include "ember/nn/layers.h"
#include "ember/ops/unary.h"

namespace ember::models {

struct FashionCnn : nn::Module {
  nn::Conv2d conv1{{.in = 1, .out = 32, .kernel = 3, .padding = 1}};
  nn::Conv2d conv2{{.in = 32, .out = 64, .kernel = 3, .padding = 1}};
  nn::Linear fc1{{.in = 64 * 7 * 7, .out = 128}}, fc2{{.in = 128, .out = 10}};
  FashionCnn() {
    register_modules({{"conv1", conv1}, {"conv2", conv2}, {"fc1", fc1}, {"fc2", fc2}});
  }
  Tensor forward(const Tensor& x) override {
    namespace F = nn::functional;
    Tensor h = F::max_pool2d(relu(conv1(x)), {.kernel_size = {2}});
    h = F::max_pool2d(relu(conv2(h)), {.kernel_size = {2}});
    return fc2(relu(fc1(h.flatten(1))));
  }
};

}  // namespace ember::models

#pragma once
// The Fashion-MNIST CNN (two conv blocks + two linear layers), shared by the example and the epoch
// benchmark (bench/fashion_mnist.cpp); examples/fashion_mnist/reference.py is the same in PyTorch.
#include <ember/ember.h>

namespace fashion {
using namespace ember;
namespace F = ember::nn::functional;

struct Net : nn::Module {
  nn::Conv2d conv1{{.in = 1, .out = 32, .kernel = 3, .padding = 1}};
  nn::Conv2d conv2{{.in = 32, .out = 64, .kernel = 3, .padding = 1}};
  nn::Linear fc1{{.in = 64 * 7 * 7, .out = 128}}, fc2{{.in = 128, .out = 10}};
  Net() { register_modules({{"conv1", conv1}, {"conv2", conv2}, {"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override {
    Tensor h = F::max_pool2d(relu(conv1(x)), {.kernel_size = {2}});
    h = F::max_pool2d(relu(conv2(h)), {.kernel_size = {2}});
    return fc2(relu(fc1(h.flatten(1))));
  }
};

}  // namespace fashion

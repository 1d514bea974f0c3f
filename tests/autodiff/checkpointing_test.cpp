// Gradient checkpointing: a tensor recomputed for the backward pass must stand for the forward
// tensor exactly: same values (not when it was written in place since), and, with create_graph,
// the same history (or second-order terms through it vanish).
#include <gtest/gtest.h>

#include <cmath>

#include "ember/ember.h"

namespace ember {
namespace {

// f(w) = sum(tanh(2w) * w): the product's rule uses tanh(2w), which checkpointing recomputes.
// f'(w) = t + 2w(1 - t^2) and f''(w) = 4(1 - t^2) - 8wt(1 - t^2), with t = tanh(2w).
TEST(Checkpointing, RecomputedInputsKeepTheirHistoryForHigherOrder) {
  const std::vector<double> w0 = {0.3, -0.7, 1.1};
  for (Device dev : {Device::flex().autodiff(), Device::flex().gradient_checkpointing()}) {
    SCOPED_TRACE(dev.str());
    Tensor w = tensor(w0, {3}, DType::F64, dev).requires_grad_();
    Tensor f = (tanh(w * 2.0) * w).sum();
    Tensor g = w.grad(f.backward({.create_graph = true}));
    ASSERT_TRUE(g.requires_grad());
    std::vector<double> h = w.grad(g.sum().backward()).to_vector<double>();
    for (size_t i = 0; i < w0.size(); ++i) {
      const double t = std::tanh(2 * w0[i]);
      EXPECT_NEAR(h[i], 4 * (1 - t * t) - 8 * w0[i] * t * (1 - t * t), 1e-12) << i;
    }
  }
}

// A Hessian-vector product through a small MLP gives the same result with and without
// checkpointing (the recomputed activations are inputs of the cheap nodes' rules).
TEST(Checkpointing, HessianVectorProductMatchesPlainAutodiff) {
  auto hvp = [](Device dev) {
    manual_seed(11);
    Tensor x = randn({6, 5}, {.dtype = DType::F64});
    Tensor w1 = (randn({4, 5}, {.dtype = DType::F64}) * 0.5).to(dev).requires_grad_();
    Tensor w2 = (randn({3, 4}, {.dtype = DType::F64}) * 0.5).to(dev).requires_grad_();
    Tensor v1 = randn({4, 5}, {.dtype = DType::F64}), v2 = randn({3, 4}, {.dtype = DType::F64});
    Tensor loss = linear(gelu(linear(x.to(dev), w1)).pow(2), w2).tanh().sum();
    Gradients g = loss.backward({.create_graph = true});
    Gradients h = ((w1.grad(g) * v1).sum() + (w2.grad(g) * v2).sum()).backward();
    return TensorList{w1.grad(h), w2.grad(h)};
  };
  TensorList plain = hvp(Device::flex().autodiff());
  TensorList ckpt = hvp(Device::flex().gradient_checkpointing());
  for (size_t i = 0; i < plain.size(); ++i)
    EXPECT_TRUE(allclose(ckpt[i], plain[i], 1e-12, 1e-12)) << i << "\n" << ckpt[i] << plain[i];
}

// A non-leaf written in place (here outside the graph, like torch's no_grad) before a cheap op
// uses it: recomputing its producer would give the old values, so it must be kept instead.
TEST(Checkpointing, TensorsWrittenInPlaceAreKeptNotRecomputed) {
  Device dev = Device::flex().gradient_checkpointing();
  Tensor w = tensor({1.0, 2.0, 3.0, 4.0}).to(dev).requires_grad_();
  Tensor h = w * 1.0;
  {
    NoGradGuard ng;
    h.add_(1.0);
  }
  Tensor loss = (h * h).sum();
  EXPECT_DOUBLE_EQ(loss.item<double>(), 54.0);
  // d/dw sum(h^2) = 2h (torch: [4, 6, 8, 10]); recomputing h from w gave 2w
  EXPECT_EQ(w.grad(loss.backward()).to_vector<double>(), (std::vector<double>{4, 6, 8, 10}));
}

}  // namespace
}  // namespace ember

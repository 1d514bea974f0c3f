#pragma once
// A small convnet's training step (conv -> training batch norm -> relu -> avg pool -> conv, loss
// mean(h * h)): the cuda tests run it on cuda:0 against flex at float64, the fusion tests on the
// cpu. Returns the gradients of (conv1 weight, conv1 bias, bn weight, bn bias, conv2 weight) and
// the running variance after the step.
#include <cmath>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/functional.h"

namespace ember::fusion_test {

inline std::vector<Tensor> convnet_step(Device d, DType dt) {
  namespace F = nn::functional;
  manual_seed(7);
  Tensor x0 = randn({4, 3, 12, 12}), w1 = randn({8, 3, 3, 3}) * 0.3, b1 = randn({8}) * 0.1;
  Tensor bnw = rand({8}) + 0.5, bnb = randn({8}) * 0.1, w2 = randn({6, 8, 3, 3}) * 0.2;
  std::vector<Tensor> p;
  for (const Tensor& t : {w1, b1, bnw, bnb, w2}) p.push_back(t.to(dt).to(d).set_requires_grad(true));
  Tensor rm = zeros({8}, {dt, d}), rv = ones({8}, {dt, d});
  Tensor h = conv2d(x0.to(dt).to(d), p[0], p[1], {.padding = {1}});
  h = F::batch_norm(h, rm, rv, p[2], p[3], true, 0.1, 1e-5);
  h = avg_pool2d(relu(h), {.kernel_size = {2}});
  h = conv2d(h, p[4], Tensor(), {.stride = {2}, .padding = {1}});
  Gradients g = (h * h).mean().backward();
  std::vector<Tensor> out;
  for (const Tensor& t : p) out.push_back(g.get(t));
  out.push_back(rv);
  return out;
}

/// ||t|| (float64, on the host).
inline double norm2(const Tensor& t) {
  const Tensor h = t.to(Device::flex()).to(DType::F64);
  return std::sqrt(sum(h * h).item<double>());
}

}  // namespace ember::fusion_test

// Elementwise and reduction workloads (rows of torch_cpu.py).
#include "bench.h"
#include "ember/ember.h"

using namespace ember;

EMBER_BENCH({.name = "add_16M", .setup = [] {
  Tensor x = randn({1 << 24}), w = randn({1 << 24});
  return std::function<void()>([=] { bench::keep(x + w); });
}});
EMBER_BENCH({.name = "exp_16M", .setup = [] {
  Tensor x = randn({1 << 24});
  return std::function<void()>([=] { bench::keep(exp(x)); });
}});
EMBER_BENCH({.name = "sum_16M", .setup = [] {
  Tensor x = randn({1 << 24});
  return std::function<void()>([=] { bench::keep(x.sum()); });
}, .suite = "reduce"});
EMBER_BENCH({.name = "chain_16M", .setup = [] {
  Tensor x = randn({1 << 24});
  return std::function<void()>([=] { bench::keep((relu(x * 2 + 1) * x).sum()); });
}});
EMBER_BENCH({.name = "gelu_chain_16M", .setup = [] {
  Tensor x = randn({1 << 24}), w = randn({1 << 24});
  return std::function<void()>([=] { bench::keep((gelu(x * w + 1.0) * sigmoid(x) - w * 0.5).relu()); });
}});
EMBER_BENCH({.name = "tiny_add_dispatch", .setup = [] {
  Tensor x = ones({4}), w = ones({4});
  return std::function<void()>([=] {
    for (int i = 0; i < 1000; ++i) bench::keep(x + w);
  });
}, .warmup = 3, .iters = 20});

// GPU rows beside bench/gpu.cpp's (run only on --device cuda): the 64M-element gelu chain with a
// sync after each call (gpu.cpp's elementwise_chain_64M queues `reps` chains before a sync, and
// a lazy device then fuses them into one kernel with `reps` outputs), and a tiny op on the eager
// device, where each call is its own kernel launch.
#include "bench.h"
#include "ember/ember.h"

using namespace ember;

// clang-format off
EMBER_BENCH({.name = "elementwise_chain_64M_synced", .setup = [] {
  Tensor x = randn({int64_t(1) << 26}), w = randn({int64_t(1) << 26});
  return std::function<void()>([=] {
    Tensor y = (gelu(x * w + 1.0) * sigmoid(x) - w * 0.5).relu();
    synchronize(y.device());
  });
}, .gpu = true});
EMBER_BENCH({.name = "tiny_op_cuda_eager", .setup = [] {
  const Device d = bench::device().eager();
  Tensor x = ones({4}, {.device = d}), w = ones({4}, {.device = d});
  return std::function<void()>([=] { bench::keep(x + w); });
}, .gpu = true, .reps = 1000});
// clang-format on

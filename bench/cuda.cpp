// GPU rows (run with --device cuda), beside bench/torch_cuda_peer.py on the same machine: the
// 64M-element gelu chain of torch_gpu.py (one fused kernel, a sync after each), softmax and
// layer_norm over 8192x4096 (one row kernel each) and a tiny op's cost on the eager device. They
// run when named (ember_bench --device cuda cuda_softmax_8192x4096). Each body makes `calls`
// calls; the median is per call.
#include "bench.h"
#include "ember/ember.h"

using namespace ember;

// clang-format off
EMBER_BENCH({.name = "cuda_gelu_chain_64M", .setup = [] {
  Tensor x = randn({1 << 26}), w = randn({1 << 26});
  return std::function<void()>([=] {
    for (int i = 0; i < 10; ++i) {  // one flush per chain (else the ten share one kernel)
      Tensor y = (gelu(x * w + 1.0) * sigmoid(x) - w * 0.5).relu();
      synchronize(y.device());
    }
  });
}, .on_request = true, .calls = 10});
EMBER_BENCH({.name = "cuda_softmax_8192x4096", .setup = [] {
  Tensor x = randn({8192, 4096});
  return std::function<void()>([=] {
    for (int i = 0; i < 20; ++i) bench::keep(softmax(x, -1));
  });
}, .on_request = true, .calls = 20});
EMBER_BENCH({.name = "cuda_layer_norm_8192x4096", .setup = [] {
  Tensor x = randn({8192, 4096}), w = ones({4096}), b = zeros({4096});
  return std::function<void()>([=] {
    for (int i = 0; i < 20; ++i) bench::keep(layer_norm(x, {4096}, w, b));
  });
}, .on_request = true, .calls = 20});
// On the eager device: each op is its own kernel launch at its call (no queue to fuse them).
EMBER_BENCH({.name = "cuda_tiny_op", .setup = [] {
  const Device d = bench::device().eager();
  Tensor x = ones({4}, {.device = d}), w = ones({4}, {.device = d});
  return std::function<void()>([=] {
    for (int i = 0; i < 1000; ++i) bench::keep(x + w);
  });
}, .on_request = true, .calls = 1000});
// clang-format on

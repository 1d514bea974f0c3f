// nn workloads (rows of torch_cpu.py).
#include "bench.h"
#include "ember/ember.h"

using namespace ember;
namespace F = ember::nn::functional;

EMBER_BENCH({.name = "softmax_4096x4096", .setup = [] {
  Tensor m = randn({4096, 4096});
  return std::function<void()>([=] { bench::keep(F::softmax(m, -1)); });
}});
// torch's nn.LayerNorm(4096): weight ones, bias zeros.
EMBER_BENCH({.name = "layernorm_4096x4096", .setup = [] {
  Tensor m = randn({4096, 4096}), w = ones({4096}), b = zeros({4096});
  return std::function<void()>([=] { bench::keep(F::layer_norm(m, {4096}, w, b)); });
}});

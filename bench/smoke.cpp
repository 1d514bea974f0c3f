// The smoke suite: rows small enough to run in milliseconds on every device, for checking that
// ember-bench, its peers and its history work (tests/tools/ember_bench_test.py) rather than for
// measuring anything.
#include "bench.h"
#include "ember/ember.h"

using namespace ember;

EMBER_BENCH({.name = "smoke_add_4k", .setup = [] {
  Tensor x = randn({4096}), w = randn({4096});
  return std::function<void()>([=] { bench::keep(x + w); });
}, .warmup = 1, .iters = 3});
EMBER_BENCH({.name = "smoke_matmul_32", .setup = [] {
  Tensor a = randn({32, 32}), b = randn({32, 32});
  return std::function<void()>([=] { bench::keep(matmul(a, b)); });
}, .warmup = 1, .iters = 3, .flops = 2.0 * 32 * 32 * 32});

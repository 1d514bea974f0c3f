// Reduction, scan and sorting workloads (16M floats unless named otherwise).
#include "bench.h"
#include "ember/ember.h"

using namespace ember;

EMBER_BENCH({.name = "amax_16M", .setup = [] {
  Tensor x = randn({1 << 24});
  return std::function<void()>([=] { bench::keep(amax(x)); });
}});
EMBER_BENCH({.name = "sum_rows_4096x4096", .setup = [] {
  Tensor x = randn({4096, 4096});
  return std::function<void()>([=] { bench::keep(sum(x, {1})); });
}});
EMBER_BENCH({.name = "sum_cols_4096x4096", .setup = [] {
  Tensor x = randn({4096, 4096});
  return std::function<void()>([=] { bench::keep(sum(x, {0})); });
}});
EMBER_BENCH({.name = "var_16M", .setup = [] {
  Tensor x = randn({1 << 24});
  return std::function<void()>([=] { bench::keep(var(x)); });
}});
EMBER_BENCH({.name = "var_rows_4096x4096", .setup = [] {
  Tensor x = randn({4096, 4096});
  return std::function<void()>([=] { bench::keep(var(x, {1})); });
}});
EMBER_BENCH({.name = "logsumexp_rows_4096x4096", .setup = [] {
  Tensor x = randn({4096, 4096});
  return std::function<void()>([=] { bench::keep(logsumexp(x, {1})); });
}});
EMBER_BENCH({.name = "norm_16M", .setup = [] {
  Tensor x = randn({1 << 24});
  return std::function<void()>([=] { bench::keep(norm(x)); });
}});
EMBER_BENCH({.name = "argmax_16M", .setup = [] {
  Tensor x = randn({1 << 24});
  return std::function<void()>([=] { bench::keep(argmax(x)); });
}});
EMBER_BENCH({.name = "max_dim1_4096x4096", .setup = [] {
  Tensor x = randn({4096, 4096});
  return std::function<void()>([=] { auto y = max(x, 1); });
}});
EMBER_BENCH({.name = "max_dim0_4096x4096", .setup = [] {
  Tensor x = randn({4096, 4096});
  return std::function<void()>([=] { auto y = max(x, 0); });
}});
EMBER_BENCH({.name = "cumsum_dim1_4096x4096", .setup = [] {
  Tensor x = randn({4096, 4096});
  return std::function<void()>([=] { bench::keep(cumsum(x, 1)); });
}});
EMBER_BENCH({.name = "cumsum_dim0_4096x4096", .setup = [] {
  Tensor x = randn({4096, 4096});
  return std::function<void()>([=] { bench::keep(cumsum(x, 0)); });
}});
EMBER_BENCH({.name = "sort_1M", .setup = [] {
  Tensor x = randn({1 << 20});
  return std::function<void()>([=] { auto y = sort(x); });
}, .warmup = 1, .iters = 5});
EMBER_BENCH({.name = "sort_rows_4096x256", .setup = [] {
  Tensor x = randn({4096, 256});
  return std::function<void()>([=] { auto y = sort(x, 1); });
}, .warmup = 1, .iters = 5});
EMBER_BENCH({.name = "topk10_1M", .setup = [] {
  Tensor x = randn({1 << 20});
  return std::function<void()>([=] { auto y = topk(x, 10); });
}});
EMBER_BENCH({.name = "median_1M", .setup = [] {
  Tensor x = randn({1 << 20});
  return std::function<void()>([=] { bench::keep(median(x)); });
}});

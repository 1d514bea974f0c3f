// Index and layout workloads (rows of bench/peers/torch_index_peer.py, run side by side with
// `ember-bench index`, docs/bench.md).
#include "bench.h"
#include "ember/ember.h"

using namespace ember;

#define BODY(setup_code, call) \
  [] {                         \
    setup_code;                \
    return std::function<void()>([=] { bench::keep(call); }); \
  }

EMBER_BENCH({.name = "idx_index_select_50k_rows_128",
             .setup = BODY(Tensor x = randn({100000, 128}); Tensor i = randint(0, 100000, {50000}),
                           index_select(x, 0, i))});
EMBER_BENCH({.name = "idx_gather_4M", .setup = BODY(Tensor x = randn({4096, 1024});
                                                    Tensor i = randint(0, 1024, {4096, 1024}),
                                                    gather(x, 1, i))});
EMBER_BENCH({.name = "idx_scatter_add_4M",
             .setup = BODY(Tensor x = zeros({4096, 1024}); Tensor s = randn({4096, 1024});
                           Tensor i = randint(0, 1024, {4096, 1024}), scatter_add(x, 1, i, s))});
EMBER_BENCH({.name = "idx_index_add_200k_rows_64",
             .setup = BODY(Tensor x = zeros({100000, 64}); Tensor s = randn({200000, 64});
                           Tensor i = randint(0, 100000, {200000}), index_add(x, 0, i, s))});
EMBER_BENCH({.name = "idx_index_put_acc_200k_rows_64",
             .setup = BODY(Tensor x = zeros({100000, 64}); Tensor s = randn({200000, 64});
                           Tensor i = randint(0, 100000, {200000}), index_put(x, {i}, s, true))});
EMBER_BENCH({.name = "idx_take_4M", .setup = BODY(Tensor x = randn({1 << 22});
                                                  Tensor i = randint(0, 1 << 22, {1 << 22}),
                                                  take(x, i))});
EMBER_BENCH({.name = "idx_masked_fill_16M", .setup = BODY(Tensor x = randn({1 << 24});
                                                          Tensor m = gt(x, 0.0),
                                                          masked_fill(x, m, 1.0))});
EMBER_BENCH({.name = "idx_masked_select_16M", .setup = BODY(Tensor x = randn({1 << 24});
                                                            Tensor m = gt(x, 0.0),
                                                            masked_select(x, m))});
EMBER_BENCH({.name = "idx_nonzero_4Mx2", .setup = BODY(Tensor x = gt(randn({2048, 2048}), 0.0),
                                                       nonzero(x))});
EMBER_BENCH({.name = "idx_cat_3x4M_dim1", .setup = BODY(Tensor a = randn({4096, 1024}),
                                                        cat({a, a, a}, 1))});
EMBER_BENCH({.name = "idx_cat_1000_small", .setup = BODY(TensorList xs(1000, randn({16, 64})),
                                                         cat(xs, 0))});
EMBER_BENCH({.name = "idx_stack_1000_small", .setup = BODY(TensorList xs(1000, randn({16, 64})),
                                                           stack(xs, 0))});
EMBER_BENCH({.name = "idx_repeat_1Mx(4,1)", .setup = BODY(Tensor a = randn({1024, 1024}),
                                                          repeat(a, {4, 1}))});
EMBER_BENCH({.name = "idx_flip_16M_last", .setup = BODY(Tensor a = randn({4096, 4096}),
                                                        flip(a, {1}))});
EMBER_BENCH({.name = "idx_roll_16M_2d", .setup = BODY(Tensor a = randn({4096, 4096}),
                                                      roll(a, {3, -5}, {0, 1}))});
EMBER_BENCH({.name = "idx_tril_16M", .setup = BODY(Tensor a = randn({4096, 4096}), tril(a))});
EMBER_BENCH({.name = "idx_pad_constant_conv_input",
             .setup = BODY(Tensor a = randn({32, 64, 56, 56}), pad(a, {1, 1, 1, 1}))});
EMBER_BENCH({.name = "idx_pad_reflect_conv_input",
             .setup = BODY(Tensor a = randn({32, 64, 56, 56}), pad(a, {1, 1, 1, 1}, "reflect"))});
EMBER_BENCH({.name = "idx_transpose_contiguous_16M",
             .setup = BODY(Tensor a = randn({4096, 4096}), a.t().contiguous())});
EMBER_BENCH({.name = "idx_repeat_interleave_4Mx2",
             .setup = BODY(Tensor a = randn({1 << 22}), repeat_interleave(a, 2))});

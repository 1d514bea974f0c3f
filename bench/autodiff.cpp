// Autodiff workloads: an MLP's forward + backward through the tape (rows of
// bench/torch_autodiff_peer.py; run side by side with
// `bench/compare.py --peer bench/torch_autodiff_peer.py --filter mlp_`).
//
// Each size comes in three rows: fwd_bwd (the training step's gradient work: forward recorded,
// backward to all six parameter gradients), fwd (forward recorded, graph dropped) and fwd_nograd
// (the same forward under a NoGradGuard). fwd - fwd_nograd is what recording the tape costs;
// with EMBER_PROFILE=1, bench/main.cpp also prints how much of each row is kernel time.
#include <cmath>
#include <cstdlib>

#include "bench.h"
#include "ember/ember.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

struct Mlp {
  TensorList params;  // w0, b0, w1, b1, ...: nn.Linear's default initialisation
  Tensor x, y;

  Mlp(int64_t batch, std::vector<int64_t> widths) {
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      const double k = 1.0 / std::sqrt(double(widths[i]));
      params.push_back(uniform(-k, k, {widths[i + 1], widths[i]}).requires_grad_());
      params.push_back(uniform(-k, k, {widths[i + 1]}).requires_grad_());
    }
    x = randn({batch, widths.front()});
    y = randint(0, widths.back(), {batch});
  }
  Tensor loss() const {
    Tensor h = x;
    for (size_t i = 0; i < params.size(); i += 2) {
      h = linear(h, params[i], params[i + 1]);
      if (i + 2 < params.size()) h = relu(h);
    }
    return F::cross_entropy(h, y);
  }
};

void register_mlp(const std::string& tag, int64_t batch, std::vector<int64_t> widths,
                  int warmup, int iters) {
  bench::Register fwd_bwd({.name = "mlp_fwd_bwd_" + tag,
                           .setup = [=] {
                             auto m = std::make_shared<Mlp>(batch, widths);
                             return std::function<void()>([m] {
                               Gradients g = m->loss().backward();
                               if (g.size() != m->params.size()) std::abort();
                             });
                           },
                           .warmup = warmup,
                           .iters = iters});
  bench::Register fwd({.name = "mlp_fwd_" + tag,
                       .setup = [=] {
                         auto m = std::make_shared<Mlp>(batch, widths);
                         return std::function<void()>([m] { Tensor l = m->loss(); });
                       },
                       .warmup = warmup,
                       .iters = iters});
  bench::Register nograd({.name = "mlp_fwd_nograd_" + tag,
                          .setup = [=] {
                            auto m = std::make_shared<Mlp>(batch, widths);
                            return std::function<void()>([m] {
                              NoGradGuard ng;
                              Tensor l = m->loss();
                            });
                          },
                          .warmup = warmup,
                          .iters = iters});
}

// 784-512-512-10 as in the issue; b16 for a step where per-op costs weigh more; a tiny MLP where
// kernels are nearly free and the step is all overhead.
const bool registered = [] {
  register_mlp("b128", 128, {784, 512, 512, 10}, 10, 50);
  register_mlp("b16", 16, {784, 512, 512, 10}, 10, 100);
  register_mlp("tiny_b16", 16, {64, 32, 32, 10}, 50, 500);
  return true;
}();

}  // namespace

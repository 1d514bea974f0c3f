// Autodiff workloads: an MLP's forward + backward through the tape (rows of
// bench/peers/torch_autodiff_peer.py; run side by side with
// `ember-bench autodiff --filter mlp_`, docs/bench.md).
//
// Each size comes in four rows: fwd_bwd (the training step's gradient work: forward recorded,
// backward to all six parameter gradients), fwd_taped (forward recorded, graph dropped),
// fwd_nograd (the same forward under a NoGradGuard) and fwd_bwd_manual (no tape: the forward
// under a NoGradGuard, then the backward written out by hand as the very ops the VJP rules run).
// (bench/models.cpp's mlp_fwd_b16 is the nn.Module inference row.)
//
// How much of a step is autodiff bookkeeping (nodes, saved tensors, graph walk, Gradients):
// - fwd_bwd - fwd_bwd_manual: the same kernels through the same dispatcher, with and without
//   the engine, so the difference is the engine alone (EMBER_PROFILE=1 shows both rows make the
//   same number of kernel calls);
// - fwd_taped - fwd_nograd: the recording part of it;
// - with EMBER_PROFILE=1, bench/main.cpp prints the share of each row spent inside kernels; the
//   rest (dispatch, inference, allocation and freeing, the engine) bounds bookkeeping from above.
#include <cmath>
#include <cstdlib>

#include "bench.h"
#include "ember/ember.h"
#include "ember/ops/modes.h"
#include "ember/ops/registry.h"

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

// The backward pass the engine runs for Mlp::loss(), spelled out (rules_nn.cpp's nll_loss and
// linear rules, rules_nn_norm.cpp's log_softmax, rules_elementwise.cpp's relu, rules.cpp's
// sum_to), with nothing recorded. Returns the six gradients.
TensorList manual_step(const Mlp& m) {
  NoGradGuard ng;
  const size_t layers = m.params.size() / 2;
  TensorList ins, outs;  // each linear's input, each relu's output
  Tensor h = m.x;
  for (size_t l = 0; l < layers; ++l) {
    ins.push_back(h);
    h = linear(h, m.params[2 * l], m.params[2 * l + 1]);
    if (l + 1 < layers) outs.push_back(h = relu(h));
  }
  const Tensor logp = nn::functional::log_softmax(h, 1);
  Attrs a;  // cross_entropy's defaults, as its decomposition passes them to nll_loss
  a.mode = uint8_t(ops::Reduction::Mean);
  a.i[0] = -100;
  const TensorList nll = dispatch(OpId::nll_loss, a, {logp, m.y, Tensor()});
  Tensor g = ones_like(nll[0]);
  // nll_loss
  const Tensor valid = ne(m.y, a.i[0]);
  const Tensor t = where(valid, m.y, Scalar(int64_t(0))).to(DType::I64);
  Tensor wt = where(valid, ones(t.shape(), {logp.dtype(), logp.device()}), 0.0);
  Tensor coef = where(valid, neg(g * wt) / nll[1], 0.0);
  g = scatter(zeros_like(logp), 1, t.unsqueeze(1), coef.unsqueeze(1));
  // log_softmax
  g = g - exp(logp) * sum(g, {1}, true);
  TensorList grads(m.params.size());
  for (size_t l = layers; l-- > 0;) {
    const Tensor &w = m.params[2 * l], &b = m.params[2 * l + 1];
    grads[2 * l] = mm(g.reshape({-1, w.size(0)}).t(), ins[l].reshape({-1, w.size(1)}));
    grads[2 * l + 1] = sum(g, {0}, true).reshape(b.shape());
    if (l == 0) break;
    g = where(outs[l - 1] <= 0, 0, matmul(g, w));  // linear's input, then relu
  }
  return grads;
}

void register_mlp(const std::string& tag, int64_t batch, std::vector<int64_t> widths,
                  int warmup, int iters) {
  bench::Register fwd_bwd({.name = "mlp_fwd_bwd_" + tag,
                           .setup = [=] {
                             auto m = std::make_shared<Mlp>(batch, widths);
                             return std::function<void()>([m] {
                               // As the torch peer's autograd.grad: nothing accumulates
                               // into the leaves' grad() slots between steps.
                               Gradients g = m->loss().backward({.accumulate_grad = false});
                               if (g.size() != m->params.size()) std::abort();
                             });
                           },
                           .warmup = warmup,
                           .iters = iters});
  bench::Register manual({.name = "mlp_fwd_bwd_manual_" + tag,
                          .setup = [=] {
                            auto m = std::make_shared<Mlp>(batch, widths);
                            return std::function<void()>([m] {
                              if (manual_step(*m).size() != m->params.size()) std::abort();
                            });
                          },
                          .warmup = warmup,
                          .iters = iters});
  bench::Register fwd({.name = "mlp_fwd_taped_" + tag,
                       .setup = [=] {
                         auto m = std::make_shared<Mlp>(batch, widths);
                         return std::function<void()>([m] { bench::keep(m->loss()); });
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

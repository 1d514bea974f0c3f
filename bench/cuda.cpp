// GPU rows beside bench/gpu.cpp's (run only on --device cuda): the 64M-element gelu chain with a
// sync after each call (gpu.cpp's elementwise_chain_64M queues `reps` chains before a sync, and
// a lazy device then fuses them into one kernel with `reps` outputs), a tiny op on the eager
// device, where each call is its own kernel launch, and captured steps (ember::capture): the
// MLP training step as one graph launch, and 1000 tiny ops in one graph (the row's milliseconds
// are microseconds per op). bench/peers/torch_graphs_peer.py has PyTorch's eager and CUDA-graph rows.
#include <memory>

#include "bench.h"
#include "ember/ember.h"
#include "ember/graph.h"

using namespace ember;

namespace {
// bench/models.cpp's MLP step (784-512-512-10, relu, Adam, b128), captured after two eager steps.
struct Mlp : nn::Module {
  nn::Linear fc1{{.in = 784, .out = 512}}, fc2{{.in = 512, .out = 512}}, fc3{{.in = 512, .out = 10}};
  Mlp() { register_modules({{"fc1", fc1}, {"fc2", fc2}, {"fc3", fc3}}); }
  Tensor forward(const Tensor& x) override { return fc3(relu(fc2(relu(fc1(x))))); }
};
struct CapturedMlp {
  Mlp net;
  optim::Adam opt{net.parameters(), {.lr = 1e-3}};
  Tensor x = randn({128, 784}), y = randint(0, 10, {128});
  CapturedStep step;
  CapturedMlp() {
    auto fn = [this] {
      Tensor loss = nn::functional::cross_entropy(net(x), y);
      opt.step(loss.backward());
      return TensorList{loss.detach()};
    };
    for (int i = 0; i < 2; ++i) fn();
    step = capture(fn, {x, y});
  }
};
std::function<void()> captured_mlp() {
  auto s = std::make_shared<CapturedMlp>();
  return [s] { s->step.replay(); };
}
}  // namespace

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
EMBER_BENCH({.name = "mlp_train_step_b128_captured", .setup = captured_mlp,
             .warmup = 20, .iters = 50, .gpu = true, .reps = 20});
EMBER_BENCH({.name = "mlp_train_step_b128_captured_synced", .setup = captured_mlp,
             .warmup = 20, .iters = 100, .gpu = true});
EMBER_BENCH({.name = "tiny_op_cuda_captured", .setup = [] {
  const Device d = bench::device().eager();
  Tensor x = ones({4}, {.device = d}), w = ones({4}, {.device = d});
  auto step = std::make_shared<CapturedStep>(capture([=] {
    Tensor y = x;
    for (int i = 0; i < 1000; ++i) y = y + w;
    return TensorList{y};
  }));
  return std::function<void()>([step] { step->replay(); });
}, .warmup = 5, .iters = 30, .gpu = true});
// clang-format on

// GPU rows beside bench/gpu.cpp's (run only on --device cuda): the 64M-element gelu chain with a
// sync after each call (gpu.cpp's elementwise_chain_64M queues `reps` chains before a sync, and
// a lazy device then fuses them into one kernel with `reps` outputs), a tiny op on the eager
// device, where each call is its own kernel launch, and captured steps (ember::capture): the
// MLP training step as one graph launch, and 1000 tiny ops in one graph (the row's milliseconds
// are microseconds per op). bench/peers/torch_graphs_peer.py has PyTorch's eager and CUDA-graph rows.
// Mixed-precision rows (the MLP step in bf16, eager and captured, and in f16 with loss scaling;
// gpu.cpp has the conv3x3 training step in bf16) sit beside bench/peers/torch_amp_peer.py.
#include <memory>

#include "bench.h"
#include "ember/ember.h"
#include "ember/amp.h"
#include "ember/graph.h"
#include "ember/train/learner.h"

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

// The same MLP step under mixed precision (f32 master weights, bf16/f16 products): eager, and
// for bf16 captured; f16 with loss scaling (GradScaler's check is a host read per step).
struct AmpMlp {
  Device d;
  Mlp net;
  std::unique_ptr<optim::Adam> opt;
  Tensor x, y;
  amp::GradScaler scaler;
  CapturedStep step;
  explicit AmpMlp(DType low)
      : d(bench::device().autodiff().mixed_precision(low)),
        scaler({.enabled = low == kF16}) {
    net.to(d);
    opt = std::make_unique<optim::Adam>(net.parameters(), optim::AdamOptions{.lr = 1e-3});
    x = randn({128, 784}).to(d);
    y = randint(0, 10, {128}).to(d);
  }
  TensorList run() {
    Tensor loss = nn::functional::cross_entropy(net(x), y);
    Gradients g = scaler.scale(loss).backward();
    scaler.step(*opt, g);
    scaler.update();
    return {loss.detach()};
  }
};
std::function<void()> amp_mlp(DType low, bool captured) {
  auto s = std::make_shared<AmpMlp>(low);
  if (!captured) return [s] { bench::keep(s->run()[0]); };
  for (int i = 0; i < 2; ++i) s->run();
  s->step = capture([p = s.get()] { return p->run(); }, {s->x, s->y});
  return [s] { s->step.replay(); };
}
// The same MLP step through the Learner: one fit of 200 batches of 128 already on the device (a
// loader of fixed batches, so the row times the Learner and not collation), with the Learner's
// automatic capture and with it off. Per step: the row's milliseconds / 200 (the automatic fit
// runs 3 eager steps, captures, and replays 197; each step reads its loss on the host).
struct DeviceBatches {
  std::vector<std::pair<Tensor, Tensor>> batches;
  int64_t size() const { return int64_t(batches.size()); }
  std::vector<std::pair<Tensor, Tensor>>& epoch(uint64_t, int64_t = 0) { return batches; }
};
std::function<void()> learner_mlp(train::CaptureMode mode) {
  struct State {
    Mlp net;
    std::unique_ptr<optim::Adam> opt;
    DeviceBatches data;
  };
  auto s = std::make_shared<State>();
  s->net.to(bench::device());
  s->opt = std::make_unique<optim::Adam>(s->net.parameters(), optim::AdamOptions{.lr = 1e-3});
  for (int i = 0; i < 200; ++i)
    s->data.batches.emplace_back(randn({128, 784}).to(bench::device()),
                                 randint(0, 10, {128}).to(bench::device()));
  return [s, mode] {
    train::Learner l(s->net, *s->opt,
                     {.epochs = 1, .renderer = train::silent_renderer(), .capture = mode});
    l.fit(s->data, train::classification_step(s->net));
  };
}

// Causal self-attention as in a GPT layer (b8, 12 heads, T 4096, head size 64, bf16): the
// forward alone, and forward plus backward (d q, k, v for a fixed output gradient); on cuda the
// fused kernels of attention_kernel.cu. Beside bench/peers/torch_attention_peer.py.
constexpr int64_t kAttB = 8, kAttH = 12, kAttT = 4096, kAttE = 64;
std::function<void()> attention(bool backward) {
  const Device d = bench::device().autodiff();
  auto make = [&] {
    return randn({kAttB, kAttH, kAttT, kAttE}).to(d).to(kBF16).set_requires_grad(backward);
  };
  Tensor q = make(), k = make(), v = make();
  Tensor dy = randn({kAttB, kAttH, kAttT, kAttE}).to(d).to(kBF16);
  return [=] {
    Tensor y = nn::functional::scaled_dot_product_attention(q, k, v, {.is_causal = true});
    if (!backward) return bench::keep(y);
    Gradients g = y.backward({.grad_output = dy, .accumulate_grad = false});  // autograd.grad
    bench::keep(g.get(q));
  };
}
// Matrix products: 2 forward, 5 backward, each B*H*T*T*E/2 multiply-adds under the causal mask.
constexpr double kAttFlops = 2.0 * kAttB * kAttH * kAttT * kAttT * kAttE / 2;
}  // namespace

// clang-format off
EMBER_BENCH({.name = "attention_causal_b8h12_T4096_d64_bf16_fwd", .setup = [] { return attention(false); },
             .warmup = 3, .iters = 20, .flops = 2 * kAttFlops, .gpu = true});
EMBER_BENCH({.name = "attention_causal_b8h12_T4096_d64_bf16_fwd_bwd", .setup = [] { return attention(true); },
             .warmup = 3, .iters = 20, .flops = 7 * kAttFlops, .gpu = true});
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
EMBER_BENCH({.name = "mlp_train_step_b128_bf16", .setup = [] { return amp_mlp(kBF16, false); },
             .warmup = 10, .iters = 50, .gpu = true});
EMBER_BENCH({.name = "mlp_train_step_b128_bf16_captured",
             .setup = [] { return amp_mlp(kBF16, true); }, .warmup = 20, .iters = 50,
             .gpu = true, .reps = 20});
EMBER_BENCH({.name = "mlp_train_step_b128_f16_scaled", .setup = [] { return amp_mlp(kF16, false); },
             .warmup = 10, .iters = 50, .gpu = true});
EMBER_BENCH({.name = "mlp_learner_200steps_b128", .setup = [] { return learner_mlp(train::CaptureMode::automatic); },
             .warmup = 2, .iters = 5, .gpu = true});
EMBER_BENCH({.name = "mlp_learner_200steps_b128_eager", .setup = [] { return learner_mlp(train::CaptureMode::off); },
             .warmup = 2, .iters = 5, .gpu = true});
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

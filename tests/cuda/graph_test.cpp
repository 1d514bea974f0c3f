// ember::capture on a GPU: a captured training step (AdamW, a scheduler, dropout) replays what
// the eager steps compute; host syncs inside a capture are CaptureErrors that leave the device
// usable; a replaced optimizer state invalidates the graph; the private pool's memory shows in
// the statistics and goes with the graph. Every test skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cuda/cuda_util.h"
#include "ember/ember.h"
#include "ember/data/loader.h"
#include "ember/graph.h"
#include "ember/train/learner.h"

namespace ember {
namespace {

Device gpu() { return Device::cuda(0); }

struct Net : nn::Module {
  nn::Linear fc1{{.in = 32, .out = 64}}, fc2{{.in = 64, .out = 64}}, fc3{{.in = 64, .out = 10}};
  Net() { register_modules({{"fc1", fc1}, {"fc2", fc2}, {"fc3", fc3}}); }
  Tensor forward(const Tensor& x) override {
    return fc3(dropout(relu(fc2(dropout(relu(fc1(x)), 0.2))), 0.2));
  }
};

// Batches from a generator of their own (the device's generator draws the dropout masks).
struct Batches {
  std::vector<Tensor> x, y;
  explicit Batches(int n) {
    Generator g(123);
    for (int i = 0; i < n; ++i) {
      x.push_back(randn({16, 32}, g).to(gpu()));
      y.push_back((rand({16}, g) * 10).to(DType::I64).to(gpu()));
    }
  }
};

struct Trained {
  std::vector<double> losses;
  std::vector<Tensor> params;
  std::vector<double> lrs;
};

// Six AdamW steps with StepLR (halving every two steps) and dropout: the first eager, the other
// five eager or replays of a capture of the step.
Trained train(bool captured) {
  Batches b(6);
  manual_seed(7);
  Net net;
  net.to(gpu());
  optim::AdamW opt(net.parameters(), {.lr = 1e-2, .weight_decay = 0.01});
  optim::StepLR sched(opt, 2, 0.5);
  Tensor x = zeros({16, 32}, {.device = gpu()});
  Tensor y = zeros({16}, {.dtype = DType::I64, .device = gpu()});
  auto step = [&] {
    Tensor loss = nn::functional::cross_entropy(net(x), y);
    opt.step(loss.backward());
    return TensorList{loss.detach()};
  };
  Trained r;
  x.copy_(b.x[0]);
  y.copy_(b.y[0]);
  r.losses.push_back(step()[0].item<double>());
  sched.step();
  CapturedStep cs;
  if (captured) {
    cs = capture(step, {x, y});
    EXPECT_TRUE(cs.graph());
  }
  for (int k = 1; k < 6; ++k) {
    x.copy_(b.x[size_t(k)]);
    y.copy_(b.y[size_t(k)]);
    if (captured) {
      cs.replay();
      r.losses.push_back(cs.output(0).item<double>());
    } else {
      r.losses.push_back(step()[0].item<double>());
    }
    r.lrs.push_back(opt.lr(0));
    sched.step();
  }
  for (const Tensor& p : net.parameters()) r.params.push_back(p.detach().clone());
  EXPECT_EQ(opt.state(0, 0).step, 6);
  return r;
}

TEST(CudaGraph, ReplayedTrainingStepEqualsEager) {
  EMBER_REQUIRE_GPU();
  const Trained eager = train(false), replayed = train(true);
  ASSERT_EQ(eager.losses.size(), replayed.losses.size());
  for (size_t i = 0; i < eager.losses.size(); ++i)
    EXPECT_NEAR(replayed.losses[i], eager.losses[i], 1e-5 * (1 + std::abs(eager.losses[i])))
        << "step " << i;
  EXPECT_EQ(replayed.lrs, eager.lrs);
  ASSERT_EQ(eager.params.size(), replayed.params.size());
  for (size_t i = 0; i < eager.params.size(); ++i)
    EXPECT_LT(testing::rel_error(replayed.params[i], eager.params[i]), 1e-5) << "parameter " << i;
}

TEST(CudaGraph, InferenceReplayReadsNewInputs) {
  EMBER_REQUIRE_GPU();
  manual_seed(3);
  nn::Linear lin({.in = 64, .out = 48});
  lin.to(gpu());
  NoGradGuard no_grad;
  Tensor x = randn({8, 64}, {.device = gpu()});
  CapturedStep cs = capture([&] { return TensorList{gelu(lin(x)) * 2 + 1}; }, {x});
  for (int k = 0; k < 3; ++k) {
    Tensor fresh = randn({8, 64}, {.device = gpu()});
    cs.input(0).copy_(fresh);
    cs.replay();
    EXPECT_LT(testing::rel_error(cs.output(0), gelu(lin(fresh)) * 2 + 1), 1e-5) << "replay " << k;
  }
  EXPECT_EQ(cs.replays(), 3);
}

TEST(CudaGraph, HostSyncInsideCaptureIsCaptureError) {
  EMBER_REQUIRE_GPU();
  Tensor x = randn({100}, {.device = gpu()});
  const float want = (x * 3).sum().item<float>();
  try {
    capture([&] {
      Tensor s = (x * 2).sum();
      if (s.item<float>() > 0) s = s + 1;  // a data-dependent branch: a host read
      return TensorList{s};
    }, {x});
    ADD_FAILURE() << "expected CaptureError";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("inside ember::capture"), std::string::npos) << e.what();
  }
  try {
    capture([&] {
      synchronize(gpu());
      return TensorList{x + 1};
    }, {x});
    ADD_FAILURE() << "expected CaptureError";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("[synchronize]"), std::string::npos) << e.what();
  }
  // The stream left capture mode cleanly: the device works on.
  EXPECT_NEAR((x * 3).sum().item<float>(), want, 1e-4 * (1 + std::abs(want)));
  synchronize(gpu());
}

TEST(CudaGraph, ReplacedOptimizerStateInvalidatesTheGraph) {
  EMBER_REQUIRE_GPU();
  manual_seed(5);
  nn::Linear lin({.in = 16, .out = 4});
  lin.to(gpu());
  optim::Adam opt(lin.parameters(), {.lr = 1e-3});
  Tensor x = randn({8, 16}, {.device = gpu()});
  auto step = [&] {
    Tensor loss = lin(x).square().mean();
    opt.step(loss.backward());
    return TensorList{loss.detach()};
  };
  try {
    optim::Adam fresh(lin.parameters(), {.lr = 1e-3});  // no state yet: its first step differs
    capture([&] {
      Tensor loss = lin(x).square().mean();
      fresh.step(loss.backward());
      return TensorList{loss};
    }, {x});
    ADD_FAILURE() << "expected CaptureError";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("run one step eagerly"), std::string::npos) << e.what();
  }
  step();
  CapturedStep cs = capture(step, {x});
  cs.replay();
  opt.load_state_dict(opt.state_dict());  // new state tensors: the graph's are gone
  EXPECT_THROW(cs.replay(), CaptureError);
  CapturedStep again = capture(step, {x});  // capturing again is the remedy
  again.replay();
  synchronize(gpu());
  EXPECT_EQ(opt.state(0, 0).step, 3);
}

TEST(CudaGraph, PrivatePoolInStatsAndFreedWithTheGraph) {
  EMBER_REQUIRE_GPU();
  Tensor w = randn({256, 256}, {.device = gpu()}), x = randn({64, 256}, {.device = gpu()});
  synchronize(gpu());
  const cuda::MemoryStats before = cuda::memory_stats();
  cuda::MemoryStats captured{};
  {
    CapturedStep cs = capture([&] { return TensorList{relu(matmul(x, w)).sum({1})}; }, {x});
    captured = cuda::memory_stats();
    EXPECT_GT(cs.pool_bytes(), 0);
    EXPECT_GE(captured.reserved, before.reserved + cs.pool_bytes());
    EXPECT_GT(captured.allocated, before.allocated);  // the outputs, the pool's tables
    for (int i = 0; i < 5; ++i) cs.replay();
    synchronize(gpu());
    const cuda::MemoryStats replayed = cuda::memory_stats();
    EXPECT_EQ(replayed.allocs, captured.allocs);  // replays allocate nothing
    EXPECT_EQ(replayed.allocated, captured.allocated);
    EXPECT_LT(testing::rel_error(cs.output(0), relu(matmul(x, w)).sum({1})), 1e-5);
  }
  synchronize(gpu());
  const cuda::MemoryStats after = cuda::memory_stats();
  EXPECT_EQ(after.allocated, before.allocated);
  EXPECT_LT(after.reserved, captured.reserved);
}

TEST(CudaGraph, RandomDrawsReplayAsEagerOrAreRefused) {
  EMBER_REQUIRE_GPU();
  Tensor x = ones({4096}, {.device = gpu()});
  manual_seed(11);
  const Tensor eager1 = dropout(x, 0.5), eager2 = dropout(x, 0.5);
  manual_seed(11);
  CapturedStep cs = capture([&] { return TensorList{dropout(x, 0.5)}; }, {x});
  cs.replay();
  const Tensor r1 = cs.output(0).clone();
  cs.replay();
  EXPECT_EQ(testing::rel_error(r1, eager1), 0.0);
  EXPECT_EQ(testing::rel_error(cs.output(0), eager2), 0.0);
  // randn runs outside the fused kernels' reach on some paths: refused, never repeated.
  try {
    CapturedStep r =
        capture([&] { return TensorList{randn({64}, {.device = gpu()})}; }, {}, {.device = gpu()});
    r.replay();
    const Tensor a = r.output(0).clone();
    r.replay();
    EXPECT_GT(testing::rel_error(r.output(0), a), 0.1);
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("random draws"), std::string::npos) << e.what();
  }
}

// The Learner captures its step by itself on a GPU (LearnerOptions::capture, automatic): host
// batches from a DataLoader, dropout, AdamW with a per-step scheduler; the replayed fit's losses
// and weights are the eager fit's to rounding. A step with a host read inside runs eagerly.
struct LearnerFit {
  train::FitResult result;
  std::vector<Tensor> params;
  std::vector<std::string> messages;
};
struct Messages : train::Renderer {
  std::vector<std::string>* out;
  explicit Messages(std::vector<std::string>* o) : out(o) {}
  void on_progress(const train::Progress&) override {}
  void on_epoch_end(const train::EpochRecord&) override {}
  void on_message(std::string_view m) override { out->emplace_back(m); }
};
LearnerFit learner_fit(train::CaptureMode mode, bool host_read = false) {
  Generator g(321);
  Tensor xs = randn({160, 32}, g), ys = (rand({160}, g) * 10).to(DType::I64);
  std::vector<data::Example> items;
  for (int64_t i = 0; i < 160; ++i) items.emplace_back(xs[i].clone(), ys[i].clone());
  data::DataLoader<data::Example> loader(data::in_memory(std::move(items)),
                                         {.batch_size = 16, .shuffle = true, .seed = 1});
  manual_seed(7);
  Net net;
  net.to(gpu());
  optim::AdamW opt(net.parameters(), {.lr = 1e-2, .weight_decay = 0.01});
  optim::StepLR sched(opt, 4, 0.5);
  LearnerFit r;
  train::Learner l(net, opt,
                   {.epochs = 2, .schedule_every = train::ScheduleEvery::step,
                    .renderer = std::make_shared<Messages>(&r.messages), .capture = mode});
  l.set_scheduler(sched);
  auto step = train::classification_step(net);
  r.result = l.fit(loader, [&](std::pair<Tensor, Tensor>& b) {
    train::StepOutput out = step(b);
    if (host_read) (void)out.loss.item<float>();
    return out;
  });
  for (const Tensor& p : net.parameters()) r.params.push_back(p.detach().clone());
  return r;
}

TEST(CudaGraph, TheLearnerCapturesARepeatedStepByItself) {
  EMBER_REQUIRE_GPU();
  const LearnerFit eager = learner_fit(train::CaptureMode::off);
  const LearnerFit replayed = learner_fit(train::CaptureMode::automatic);
  EXPECT_EQ(eager.result.replayed_steps, 0);
  EXPECT_EQ(replayed.result.replayed_steps, 2 * 10 - 2);
  EXPECT_EQ(replayed.result.global_step, 20);
  ASSERT_EQ(eager.result.history.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    const double a = eager.result.history[e].train[0].second,
                 b = replayed.result.history[e].train[0].second;
    EXPECT_NEAR(b, a, 1e-5 * (1 + std::abs(a))) << "epoch " << e + 1;
  }
  for (size_t i = 0; i < eager.params.size(); ++i)
    EXPECT_LT(testing::rel_error(replayed.params[i], eager.params[i]), 1e-5) << "parameter " << i;
  // A host read inside the step: capturing it fails, the fit goes on eagerly and says so.
  const LearnerFit synced = learner_fit(train::CaptureMode::automatic, true);
  EXPECT_EQ(synced.result.replayed_steps, 0);
  ASSERT_EQ(synced.messages.size(), 1u);
  EXPECT_NE(synced.messages[0].find("training steps run eagerly"), std::string::npos)
      << synced.messages[0];
  for (size_t i = 0; i < eager.params.size(); ++i)
    EXPECT_LT(testing::rel_error(synced.params[i], eager.params[i]), 1e-5) << "parameter " << i;
}

}  // namespace
}  // namespace ember

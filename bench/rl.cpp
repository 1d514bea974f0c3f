// The rl suite: environment steps of ember::rl (no tensors; the same on every device). Each row
// times 1M steps with random actions drawn beforehand, resetting at episode ends: 1e9 / median_ms
// is steps per second (build/bench/ember_rl_bench prints steps/s for every environment).
#include <memory>
#include <vector>

#include "bench.h"
#include "ember/rl/envs.h"

using namespace ember;

namespace {

std::function<void()> steps_1m(const char* name) {
  auto env = std::shared_ptr<rl::Env>(rl::make(name));
  auto acts = std::make_shared<std::vector<rl::ActionValue>>();
  rl::Rng rng(0);
  for (int i = 0; i < 4096; ++i) acts->push_back(env->action_space().sample(rng));
  env->reset(0);
  return [env, acts] {
    float acc = 0;
    for (int64_t t = 0; t < 1000000; ++t) {
      rl::StepResult r = env->step((*acts)[size_t(t) & 4095].view());
      acc += r.obs[0];
      if (r.done()) env->reset();
    }
    volatile float sink = acc;
    (void)sink;
  };
}

}  // namespace

EMBER_BENCH({.name = "rl_cartpole_steps_1M", .setup = [] { return steps_1m("CartPole-v1"); }, .warmup = 1, .iters = 5});
EMBER_BENCH({.name = "rl_pendulum_steps_1M", .setup = [] { return steps_1m("Pendulum-v1"); }, .warmup = 1, .iters = 5});

// The agents' small networks: one Adam step of a 4-64-64-2 MLP (CartPole's Q-network size) on a
// batch of 64, and one action (a forward pass for one observation, read back). Run with
// --device flex, cpu_eager and cpu to see which backend suits them (docs/rl.md, "Devices").
#include "ember/ember.h"
#include "ember/rl/agent.h"

namespace {

std::shared_ptr<rl::MLP> small_mlp() {
  manual_seed(0);
  return std::make_shared<rl::MLP>(rl::MLPOptions{.in = 4, .out = 2, .hidden = {64, 64}});
}

}  // namespace

EMBER_BENCH({.name = "rl_mlp_train_step_b64", .setup = [] {
  auto net = small_mlp();
  auto opt = std::make_shared<optim::Adam>(net->parameters(), optim::AdamOptions{.lr = 1e-3});
  Tensor x = randn({64, 4}), y = randn({64, 2});
  return std::function<void()>([=] {
    Tensor loss = mse_loss((*net)(x), y);
    opt->step(loss.backward());
    bench::keep(loss);
  });
}, .warmup = 20, .iters = 200});
EMBER_BENCH({.name = "rl_mlp_act_b1", .setup = [] {
  auto net = small_mlp();
  Tensor x = randn({1, 4});
  return std::function<void()>([=] {
    NoGradGuard no_grad;
    volatile float v = (*net)(x).to_vector<float>()[0];
    (void)v;
  });
}, .warmup = 100, .iters = 1000});

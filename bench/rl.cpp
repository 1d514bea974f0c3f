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

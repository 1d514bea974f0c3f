// PPO on CartPole-v1 with 8 environments (Stable-Baselines3 zoo's hyperparameters): trains,
// keeps the policy that did best in periodic greedy evaluations, then prints the mean return of
// 100 greedy episodes on unseen seeds and the wall time. Solved at >= 475.
// Usage: rl_cartpole_ppo [--seed N] [--steps N] [--log metrics.csv] [--save FILE] [--resume FILE]
#include <ember/rl/ppo.h>

#include "../rl_common/run.h"

using namespace ember;

int main(int argc, char** argv) {
  auto args = rl_example::parse(argc, argv, 100000);
  rl::PPO agent([](int64_t) { return rl::make("CartPole-v1"); },
                {.total_steps = args.steps, .num_envs = 8, .n_steps = 32, .epochs = 20, .minibatches = 1,
                 .lr = 1e-3, .gamma = 0.98, .gae_lambda = 0.8, .seed = args.seed, .device = args.device, .eval_every = 10000,
                 .metrics = {.every = 10000, .renderer = args.renderer.get(), .log = args.log}});
  return rl_example::run("rl_cartpole_ppo", agent, args);
}

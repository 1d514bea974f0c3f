// PPO on Acrobot-v1 with 16 environments and normalised observations (Stable-Baselines3 zoo's
// hyperparameters): trains, keeps the policy that did best in periodic greedy evaluations,
// then prints the mean return of 100 greedy episodes on unseen seeds and the wall time.
// Usage: rl_acrobot_ppo [--seed N] [--steps N] [--log metrics.csv] [--save FILE] [--resume FILE]
#include <ember/rl/ppo.h>

#include "../rl_common/run.h"

using namespace ember;

int main(int argc, char** argv) {
  auto args = rl_example::parse(argc, argv, 1000000);
  rl::PPO agent([](int64_t) { return rl::make("Acrobot-v1"); },
                {.total_steps = args.steps, .num_envs = 16, .n_steps = 256, .epochs = 4, .minibatches = 16,
                 .lr = 3e-4, .anneal_lr = false, .gamma = 0.99, .gae_lambda = 0.94, .normalize_obs = true,
                 .seed = args.seed, .device = args.device, .eval_every = 20000,
                 .metrics = {.every = 20000, .renderer = args.renderer.get(), .log = args.log}});
  return rl_example::run("rl_acrobot_ppo", agent, args);
}

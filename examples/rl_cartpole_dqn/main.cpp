// DQN on CartPole-v1 (double Q-learning, a dueling head, a target network; Stable-Baselines3
// zoo's hyperparameters): trains, keeps the network that did best in periodic greedy
// evaluations, then prints the mean return of 100 greedy episodes on unseen seeds and the wall
// time. CartPole-v1 counts as solved at >= 475.
// Usage: rl_cartpole_dqn [--seed N] [--steps N] [--log metrics.csv] [--save FILE] [--resume FILE]
#include <ember/rl/dqn.h>

#include "../rl_common/run.h"

using namespace ember;

int main(int argc, char** argv) {
  auto args = rl_example::parse(argc, argv, 50000);
  rl::DQN agent([](int64_t) { return rl::make("CartPole-v1"); },
                {.total_steps = args.steps, .seed = args.seed, .device = args.device, .eval_every = 5000, .eval_episodes = 10,
                 .metrics = {.every = 10000, .renderer = args.renderer.get(), .log = args.log}});
  return rl_example::run("rl_cartpole_dqn", agent, args);
}

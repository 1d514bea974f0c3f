// SAC on Pendulum-v1 for 20,000 steps (Stable-Baselines3 zoo's hyperparameters, with 64-unit
// layers: as good as 256 here and four times faster): trains, then
// prints the mean return of 100 deterministic episodes on unseen seeds and the wall time.
// Usage: rl_pendulum_sac [--seed N] [--steps N] [--log metrics.csv] [--save FILE] [--resume FILE]
#include <ember/rl/sac.h>

#include "../rl_common/run.h"

using namespace ember;

int main(int argc, char** argv) {
  auto args = rl_example::parse(argc, argv, 20000);
  rl::SAC agent([](int64_t) { return rl::make("Pendulum-v1"); },
                {.total_steps = args.steps, .hidden = {64, 64}, .seed = args.seed, .device = args.device,
                 .metrics = {.every = 2000, .renderer = args.renderer.get(), .log = args.log}});
  return rl_example::run("rl_pendulum_sac", agent, args);
}

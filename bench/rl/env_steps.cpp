// Environment steps per second: each classic-control environment stepped single-threaded with
// uniformly random actions (drawn beforehand), bare and through rl::make's TimeLimit, and
// CartPole-v1 in a VectorEnv (synchronous and on worker threads). Prints the median of ROUNDS
// runs of STEPS steps each. ember::rl's CartPole should step >= 5M times a second.
// Usage: ember_rl_bench [steps = 2000000] [rounds = 5]
#include <ember/rl/envs.h>
#include <ember/rl/vector_env.h>
#include <ember/rl/wrappers.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace ember;

namespace {

double median_rate(int rounds, int64_t steps, const std::function<void()>& body) {
  std::vector<double> rates;
  body();  // warm up
  for (int r = 0; r < rounds; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    body();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(double(steps) / s);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

// Random actions of env's action space, drawn before timing; the loop resets at episode ends.
double env_rate(rl::Env& env, int64_t steps, int rounds) {
  rl::Rng rng(0);
  std::vector<rl::ActionValue> acts;
  for (int i = 0; i < 4096; ++i) acts.push_back(env.action_space().sample(rng));
  std::vector<rl::Action> views;
  for (const auto& a : acts) views.push_back(a.view());
  volatile float sink = 0;
  env.reset(0);
  return median_rate(rounds, steps, [&] {
    float acc = 0;
    for (int64_t t = 0; t < steps; ++t) {
      rl::StepResult r = env.step(views[size_t(t) & 4095]);
      acc += r.obs[0];
      if (r.done()) env.reset();
    }
    sink = sink + acc;
  });
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 2000000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  std::printf("%-44s %14s\n", "environment", "steps/s");
  for (const auto& name : rl::registered_envs()) {
    auto made = rl::make(name);
    auto* bare = &static_cast<rl::Wrapper&>(*made).inner();
    std::printf("%-44s %14.0f\n", (name + " (bare)").c_str(), env_rate(*bare, steps, rounds));
    std::printf("%-44s %14.0f\n", (name + " (make: TimeLimit)").c_str(), env_rate(*made, steps, rounds));
  }
  for (int64_t threads : {0, 2}) {
    const int64_t n = 8;
    rl::VectorEnv v(n, [](int64_t) { return rl::make("CartPole-v1"); }, {.threads = threads});
    v.reset(0);
    rl::Rng rng(1);
    std::vector<int64_t> acts(size_t(n * 4096));
    for (auto& a : acts) a = rng.integer(2);
    const int64_t calls = steps / n;
    const double rate = median_rate(rounds, calls * n, [&] {
      for (int64_t t = 0; t < calls; ++t)
        v.step(std::span<const int64_t>(acts.data() + (t & 4095) * n, size_t(n)));
    });
    std::printf("%-44s %14.0f\n",
                ("CartPole-v1 VectorEnv(8, threads " + std::to_string(threads) + ")").c_str(), rate);
  }
  return 0;
}

#pragma once
// What the rl_* examples share: their command line and their result line.
// Usage: <example> [--seed N] [--steps N] [--log metrics.csv] [--save FILE] [--resume FILE]
//                  [--device flex|cpu_eager|cpu] [--quiet]
#include <ember/rl/agent.h>
#include <ember/train/renderer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

namespace rl_example {

struct Args {
  uint64_t seed = 0;
  int64_t steps = 0;  // 0: the example's default
  std::string log, save, resume;
  /// --device flex (default: small networks run fastest eagerly on the host), cpu_eager or cpu.
  ember::Device device = ember::Device::flex();
  std::unique_ptr<ember::train::Renderer> renderer;
};

inline Args parse(int argc, char** argv, int64_t default_steps) {
  Args a;
  a.steps = default_steps;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const bool has = i + 1 < argc;
    if (!std::strcmp(argv[i], "--quiet")) quiet = true;
    else if (has && !std::strcmp(argv[i], "--seed")) a.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (has && !std::strcmp(argv[i], "--steps")) a.steps = std::atoll(argv[++i]);
    else if (has && !std::strcmp(argv[i], "--log")) a.log = argv[++i];
    else if (has && !std::strcmp(argv[i], "--save")) a.save = argv[++i];
    else if (has && !std::strcmp(argv[i], "--resume")) a.resume = argv[++i];
    else if (has && !std::strcmp(argv[i], "--device")) {
      const std::string d = argv[++i];
      a.device = d == "cpu" ? ember::Device::cpu() : d == "cpu_eager" ? ember::Device::cpu().eager()
                                                                   : ember::Device::flex();
    }
    else {
      std::fprintf(stderr, "usage: %s [--seed N] [--steps N] [--log FILE] [--save FILE] [--resume FILE] [--device flex|cpu_eager|cpu] [--quiet]\n", argv[0]);
      std::exit(2);
    }
  }
  a.renderer = quiet ? ember::train::silent_renderer() : ember::train::plain_renderer(std::cout, 0);
  return a;
}

/// Loads --resume, trains, saves --save, evaluates 100 greedy episodes on unseen seeds and
/// prints the mean return and the wall time.
template <class Agent>
int run(const char* name, Agent& agent, const Args& a) {
  if (!a.resume.empty()) agent.load(a.resume);
  const int64_t start = agent.steps();
  const auto t0 = std::chrono::steady_clock::now();
  agent.learn();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.save.empty()) agent.save(a.save);
  ember::rl::Evaluation e = agent.evaluate(100, 1000000 + a.seed);
  std::printf("%s seed %llu: mean return %.1f +- %.1f over 100 episodes; %lld steps in %.1f s "
              "(%.0f steps/s)\n",
              name, (unsigned long long)a.seed, e.mean, e.stddev, (long long)agent.steps(), s,
              double(agent.steps() - start) / s);
  return 0;
}

}  // namespace rl_example

#pragma once
// DQN (Mnih et al. 2015) with a target network, double Q-learning (van Hasselt et al. 2016), a
// dueling head (Wang et al. 2016), optional n-step returns and prioritized replay. One
// environment; training continues from where a checkpoint left it, bit for bit.
#include <memory>
#include <optional>

#include "ember/optim/optimizers.h"
#include "ember/rl/agent.h"
#include "ember/rl/replay.h"

namespace ember::rl {

struct QNetworkOptions {
  int64_t obs_size = 0, actions = 0;
  std::vector<int64_t> hidden = {64, 64};
  /// Q = V + A - mean(A) from separate value and advantage layers after a shared trunk.
  bool dueling = true;
};

class QNetwork : public nn::Module {
 public:
  explicit QNetwork(const QNetworkOptions& o);
  /// Q-values [B, actions] of observations [B, obs_size].
  Tensor forward(const Tensor& obs) override;
  std::string type_name() const override { return "QNetwork"; }

 private:
  std::shared_ptr<MLP> trunk_;
  std::shared_ptr<nn::Linear> value_, advantage_;
  bool dueling_;
};

struct DQNOptions {
  int64_t total_steps = 50000;
  QNetworkOptions net = {.hidden = {256, 256}};  // sizes come from the environment
  bool double_q = true;
  double lr = 2.3e-3, gamma = 0.99;
  int64_t buffer_size = 100000, batch_size = 64, learning_starts = 1000;
  /// Every train_freq environment steps, gradient_steps updates.
  int64_t train_freq = 256, gradient_steps = 128;
  /// Every target_update environment steps the target net moves to tau * online +
  /// (1 - tau) * target (tau = 1: a copy), as Stable-Baselines3 counts it.
  int64_t target_update = 10;
  double tau = 1.0;
  /// Epsilon from start to end over exploration_fraction of total_steps.
  double epsilon_start = 1.0, epsilon_end = 0.04, exploration_fraction = 0.16;
  int64_t n_step = 1;
  bool prioritized = false;
  /// per.beta anneals linearly to 1 over total_steps.
  PrioritizedOptions per = {};
  double max_grad_norm = 10;
  uint64_t seed = 0;
  /// Small networks run fastest on the eager host backend.
  Device device = Device::flex();
  /// Every eval_every steps, eval_episodes greedy episodes; the best network is kept and
  /// restored when learn() finishes (0: no evaluation).
  int64_t eval_every = 0, eval_episodes = 10;
  MetricsOptions metrics = {};
};

class DQN {
 public:
  DQN(EnvFactory make_env, DQNOptions o);
  /// Trains until total_steps environment steps (or `until`, when given and smaller).
  void learn(std::optional<int64_t> until = {});
  /// The greedy action for one observation.
  int64_t act(std::span<const float> obs);
  Evaluation evaluate(int64_t episodes, uint64_t seed);
  /// Everything learn() needs to continue: networks, optimizer, buffer, environment, generators,
  /// counters, metrics.
  void save(const std::string& path) const;
  void load(const std::string& path);
  int64_t steps() const { return step_; }
  QNetwork& q() { return *q_; }
  Metrics& metrics() { return metrics_; }
  const DQNOptions& options() const { return o_; }

 private:
  void train_step();
  void evaluate_and_keep_best();
  EnvFactory make_;
  DQNOptions o_;
  EnvLoop loop_;
  std::shared_ptr<QNetwork> q_, target_;
  std::unique_ptr<optim::Adam> opt_;
  std::unique_ptr<ReplayBuffer> buffer_;
  std::unique_ptr<NStepCollector> nstep_;
  Rng rng_;
  Metrics metrics_;
  int64_t step_ = 0, updates_ = 0;
  BestSoFar best_;
};

}  // namespace ember::rl

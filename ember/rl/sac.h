#pragma once
// SAC (Haarnoja et al. 2018, with the learned temperature of "Soft Actor-Critic Algorithms and
// Applications"): a tanh-squashed Gaussian actor scaled to a Box action space, twin Q critics
// with polyak-averaged targets, and automatic entropy tuning. One environment; checkpoints
// continue bit for bit.
#include <memory>
#include <optional>

#include "ember/optim/optimizers.h"
#include "ember/rl/agent.h"
#include "ember/rl/replay.h"

namespace ember::rl {

struct SACOptions {
  int64_t total_steps = 20000;
  std::vector<int64_t> hidden = {256, 256};
  double lr = 1e-3, gamma = 0.99, tau = 0.005;
  int64_t buffer_size = 100000, batch_size = 256, learning_starts = 100;
  int64_t train_freq = 1, gradient_steps = 1;
  /// Temperature: learned towards target_entropy (default -action size) when auto_alpha.
  bool auto_alpha = true;
  double alpha = 1.0;
  std::optional<double> target_entropy = {};
  uint64_t seed = 0;
  Device device = Device::flex();
  int64_t eval_every = 0, eval_episodes = 5;
  MetricsOptions metrics = {};
};

class SAC {
 public:
  SAC(EnvFactory make_env, SACOptions o);
  void learn(std::optional<int64_t> until = {});
  /// The deterministic action tanh(mean), scaled to the action space.
  ActionValue act(std::span<const float> obs);
  Evaluation evaluate(int64_t episodes, uint64_t seed);
  void save(const std::string& path) const;
  void load(const std::string& path);
  int64_t steps() const { return step_; }
  Metrics& metrics() { return metrics_; }
  MLP& actor() { return *actor_; }
  double alpha() const;

 private:
  /// (action, log-prob) for observations [B, obs] with noise from the agent's generator.
  std::pair<Tensor, Tensor> sample(const Tensor& obs);
  Tensor q(MLP& net, const Tensor& obs, const Tensor& act);
  void train_step();
  void evaluate_and_keep_best();
  EnvFactory make_;
  SACOptions o_;
  EnvLoop loop_;
  int64_t obs_size_, act_size_;
  std::vector<float> scale_, bias_;
  std::shared_ptr<MLP> actor_, q1_, q2_, q1_target_, q2_target_;
  Tensor log_alpha_;
  std::unique_ptr<optim::Adam> actor_opt_, critic_opt_, alpha_opt_;
  std::unique_ptr<ReplayBuffer> buffer_;
  Rng rng_;
  Metrics metrics_;
  int64_t step_ = 0;
  BestSoFar best_;
};

}  // namespace ember::rl

#pragma once
// PPO (Schulman et al. 2017): a clipped surrogate objective over rollouts of vectorised
// environments, GAE advantages, value clipping, an entropy bonus, optional observation
// normalisation, and a linearly annealed learning rate. Discrete actions use a categorical head;
// Box actions a diagonal Gaussian with a learned, state-independent log std (clipped to the
// bounds when stepping). Checkpoints continue bit for bit.
#include <memory>
#include <optional>

#include "ember/optim/optimizers.h"
#include "ember/rl/agent.h"
#include "ember/rl/normalize.h"
#include "ember/rl/rollout.h"

namespace ember::rl {

struct PPOOptions {
  int64_t total_steps = 200000;  // environment steps over all copies
  int64_t num_envs = 8, n_steps = 128;
  int64_t epochs = 10, minibatches = 4;
  double lr = 3e-4;
  bool anneal_lr = true;
  double gamma = 0.99, gae_lambda = 0.95, clip = 0.2;
  bool clip_value = true;
  double vf_coef = 0.5, ent_coef = 0.0, max_grad_norm = 0.5;
  bool normalize_advantages = true;
  /// Running mean/std normalisation of observations (kept in checkpoints, used by act()).
  bool normalize_obs = false;
  std::vector<int64_t> hidden = {64, 64};
  Activation activation = Activation::Tanh;
  double init_log_std = 0.0;  // continuous actions
  /// Worker threads stepping the environments (0: the caller's thread).
  int64_t threads = 0;
  uint64_t seed = 0;
  Device device = Device::flex();
  /// Every eval_every steps, eval_episodes greedy episodes; the best policy is restored when
  /// learn() finishes (0: no evaluation).
  int64_t eval_every = 0, eval_episodes = 10;
  MetricsOptions metrics = {};
};

class PPO {
 public:
  PPO(EnvFactory make_env, PPOOptions o);
  void learn(std::optional<int64_t> until = {});
  /// The deterministic action (argmax, or the Gaussian's mean clipped to the bounds).
  ActionValue act(std::span<const float> obs);
  Evaluation evaluate(int64_t episodes, uint64_t seed);
  void save(const std::string& path) const;
  void load(const std::string& path);
  int64_t steps() const { return step_; }
  MLP& actor() { return *actor_; }
  MLP& critic() { return *critic_; }
  Metrics& metrics() { return metrics_; }

 private:
  Tensor normalized(std::span<const float> obs, int64_t rows, bool update);
  void collect();
  void update();
  void evaluate_and_keep_best();
  std::vector<Tensor> params() const;
  EnvFactory make_;
  PPOOptions o_;
  std::unique_ptr<VectorEnv> envs_;
  bool discrete_;
  int64_t obs_size_, act_size_;
  std::shared_ptr<MLP> actor_, critic_;
  Tensor log_std_;
  std::unique_ptr<optim::Adam> opt_;
  std::unique_ptr<RolloutStorage> rollout_;
  RunningMeanStd obs_rms_;
  Rng rng_;
  Metrics metrics_;
  std::vector<float> obs_;
  std::vector<double> ep_ret_;
  std::vector<int64_t> ep_len_;
  int64_t step_ = 0, iteration_ = 0;
  BestSoFar best_;
};

}  // namespace ember::rl

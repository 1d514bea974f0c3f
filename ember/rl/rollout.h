#pragma once
// Rollout storage for on-policy agents: T steps of N environments, generalized advantage
// estimation (Schulman et al. 2016) and shuffled minibatches.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ember/device.h"
#include "ember/rl/rng.h"
#include "ember/tensor.h"

namespace ember::rl {

struct RolloutOptions {
  int64_t steps = 128;
  int64_t num_envs = 1;
  int64_t obs_size = 1;
  bool discrete = true;
  int64_t action_size = 1;
};

/// One step of every environment.
struct RolloutStep {
  std::span<const float> obs;        // [N, obs]: what the policy saw
  std::span<const float> actions;    // [N, act] (indices as floats when discrete)
  std::span<const float> log_probs;  // [N]
  std::span<const float> values;     // [N]
  std::span<const double> rewards;   // [N]
  std::span<const uint8_t> terminated, truncated;  // [N]
  /// [N] V(final observation) where truncated: added as gamma * V to the reward, so a time
  /// limit does not look like a terminal state. Empty: no bootstrap.
  std::span<const float> final_values = {};
};

/// A minibatch: obs [B, obs], actions [B] int64 or [B, act] f32, log_probs, values, advantages,
/// returns [B].
struct RolloutBatch {
  Tensor obs, actions, log_probs, values, advantages, returns;
};

class RolloutStorage {
 public:
  explicit RolloutStorage(RolloutOptions o);
  void add(const RolloutStep& s);
  /// Advantages and returns by GAE(gamma, lambda), bootstrapped from `last_values` [N] (the
  /// values of the observations after the last step).
  void compute_returns(std::span<const float> last_values, double gamma, double lambda);
  /// The whole rollout shuffled into `count` minibatches (the last takes any remainder).
  std::vector<RolloutBatch> minibatches(int64_t count, Rng& rng, std::optional<Device> device = {}) const;
  bool full() const { return t_ == o_.steps; }
  void clear() { t_ = 0; }
  int64_t steps_stored() const { return t_; }
  /// [T * N] in step-major order.
  const std::vector<float>& advantages() const { return adv_; }
  const std::vector<float>& returns() const { return ret_; }
  const RolloutOptions& options() const { return o_; }

 private:
  RolloutOptions o_;
  int64_t t_ = 0;
  std::vector<float> obs_, actions_, log_probs_, values_, rewards_, bootstrap_, adv_, ret_;
  std::vector<uint8_t> dones_;
};

/// GAE over [T, N] arrays (step-major): dones[t] marks that step t ended its episode (the next
/// observation belongs to a new one). Writes advantages and returns (advantages + values).
void compute_gae(std::span<const float> rewards, std::span<const float> values,
                 std::span<const uint8_t> dones, std::span<const float> last_values, int64_t num_envs,
                 double gamma, double lambda, std::span<float> advantages, std::span<float> returns);

}  // namespace ember::rl

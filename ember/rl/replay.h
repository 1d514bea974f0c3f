#pragma once
// Replay buffers for off-policy agents: uniform, prioritized (proportional, over a sum-tree;
// Schaul et al. 2016) and an n-step return collector in front of either. Transitions live in
// flat host arrays; a sampled batch comes back as tensors on the device asked for.
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "ember/device.h"
#include "ember/optim/optimizer.h"
#include "ember/rl/rng.h"
#include "ember/rl/space.h"
#include "ember/tensor.h"

namespace ember::rl {

struct ReplayOptions {
  int64_t capacity = 100000;
  int64_t obs_size = 1;
  /// Discrete actions are stored as int64 indices; continuous ones as action_size floats.
  bool discrete = true;
  int64_t action_size = 1;
};

/// A sampled batch: obs [B, obs], actions [B] int64 (discrete) or [B, act] f32, rewards [B],
/// next_obs [B, obs], dones [B] (1 where the episode terminated: no bootstrapping), discounts [B]
/// (the factor on the bootstrapped value: gamma, or gamma^n for n-step returns), and for a
/// prioritized buffer importance weights [B] (1 otherwise) and the indices to update.
struct ReplayBatch {
  Tensor obs, actions, rewards, next_obs, dones, discounts, weights;
  std::vector<int64_t> indices;
};

/// A ring buffer of transitions, sampled uniformly with replacement.
class ReplayBuffer {
 public:
  explicit ReplayBuffer(ReplayOptions o);
  virtual ~ReplayBuffer() = default;
  /// Adds (obs, action, reward, next_obs, terminated) with the bootstrap factor `discount`.
  virtual void add(std::span<const float> obs, const Action& action, double reward,
                   std::span<const float> next_obs, bool terminated, double discount);
  virtual ReplayBatch sample(int64_t batch, Rng& rng, std::optional<Device> device = {});
  /// The transitions at `indices` (weights 1).
  ReplayBatch gather(std::span<const int64_t> indices, std::optional<Device> device = {}) const;
  int64_t size() const { return size_; }
  int64_t capacity() const { return o_.capacity; }
  const ReplayOptions& options() const { return o_; }
  /// Contents and position, for checkpoints (tensors "obs", ...; scalars "size", "pos").
  virtual optim::State state_dict() const;
  virtual void load_state_dict(const optim::State& s);

 protected:
  ReplayOptions o_;
  int64_t size_ = 0, pos_ = 0;
  std::vector<float> obs_, next_obs_, cont_actions_, rewards_, dones_, discounts_;
  std::vector<int64_t> int_actions_;
};

/// A binary tree over `capacity` leaves whose nodes hold the sum (and minimum) of their children.
class SumTree {
 public:
  explicit SumTree(int64_t capacity);
  void set(int64_t i, double v);
  double get(int64_t i) const { return sum_[size_t(leaves_ + i)]; }
  double total() const { return sum_[1]; }
  /// Minimum over the leaves set so far (+inf before any).
  double min() const { return min_[1]; }
  /// The leaf where the prefix sum passes `mass` (0 <= mass < total()).
  int64_t find(double mass) const;
  int64_t capacity() const { return capacity_; }

 private:
  int64_t capacity_, leaves_;
  std::vector<double> sum_, min_;
};

struct PrioritizedOptions {
  double alpha = 0.6;  // priority exponent
  double beta = 0.4;   // importance-sampling exponent (anneal towards 1 with set_beta)
  double eps = 1e-6;   // added to |TD error|
};

/// Samples transition i with probability p_i^alpha / sum p^alpha; weights are
/// (N P(i))^-beta normalised by their maximum. New transitions get the largest priority seen.
class PrioritizedReplayBuffer : public ReplayBuffer {
 public:
  PrioritizedReplayBuffer(ReplayOptions o, PrioritizedOptions p = {});
  void add(std::span<const float> obs, const Action& action, double reward,
           std::span<const float> next_obs, bool terminated, double discount) override;
  ReplayBatch sample(int64_t batch, Rng& rng, std::optional<Device> device = {}) override;
  /// New priorities (|TD errors|) for the transitions a batch sampled.
  void update_priorities(std::span<const int64_t> indices, std::span<const float> td_errors);
  void set_beta(double beta) { p_.beta = beta; }
  double priority(int64_t i) const { return tree_.get(i); }
  optim::State state_dict() const override;
  void load_state_dict(const optim::State& s) override;

 private:
  PrioritizedOptions p_;
  SumTree tree_;
  double max_priority_ = 1.0;
};

/// Turns each environment's stream of 1-step transitions into n-step ones: the reward is
/// r_t + gamma r_{t+1} + ... + gamma^{k-1} r_{t+k-1}, the next observation the one k steps on and
/// the discount gamma^k (k = n, or fewer where the episode ended).
class NStepCollector {
 public:
  NStepCollector(int64_t n, double gamma, int64_t num_envs = 1);
  /// One step of environment `env`; completed n-step transitions go into `out`.
  void add(int64_t env, std::span<const float> obs, const Action& action, double reward,
           std::span<const float> next_obs, bool terminated, bool truncated, ReplayBuffer& out);
  int64_t n() const { return n_; }
  /// The transitions still waiting for their n steps, for checkpoints.
  optim::State state_dict() const;
  void load_state_dict(const optim::State& s);

 private:
  struct Pending {
    std::vector<float> obs;
    ActionValue action;
    double reward;
  };
  void emit(std::deque<Pending>& q, std::span<const float> next_obs, bool terminated,
            ReplayBuffer& out);
  int64_t n_;
  double gamma_;
  std::vector<std::deque<Pending>> queues_;
};

}  // namespace ember::rl

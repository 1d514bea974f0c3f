#pragma once
// Policy heads: epsilon-greedy over Q-values, a categorical distribution over logits, and diagonal
// Gaussians (plain, and squashed by tanh for bounded actions as in SAC). Log-probabilities and
// entropies are ember ops, so gradients flow through them; sampling that needs no gradient runs
// on the host with an rl::Rng.
#include <cstdint>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/rl/rng.h"
#include "ember/tensor.h"

namespace ember::rl {

/// Epsilon from `start` to `end` linearly over `steps` steps, then `end`.
struct LinearSchedule {
  double start = 1.0, end = 0.05;
  int64_t steps = 10000;
  double at(int64_t step) const;
};

/// For each row of `q` [N, A] (or one row [A]): a uniform action with probability epsilon, else
/// the argmax (the first on ties).
std::vector<int64_t> epsilon_greedy(const Tensor& q, double epsilon, Rng& rng);

/// A categorical distribution over the last dim of `logits` [..., K].
class Categorical {
 public:
  explicit Categorical(Tensor logits);
  /// Log-probabilities of `actions` (int64, the logits' shape without the last dim).
  Tensor log_prob(const Tensor& actions) const;
  /// Entropy per row.
  Tensor entropy() const;
  Tensor probs() const;
  const Tensor& log_probs() const { return log_p_; }
  /// One sampled index per row (host; inverse CDF on rng draws).
  std::vector<int64_t> sample(Rng& rng) const;
  /// The most likely index per row.
  std::vector<int64_t> mode() const;

 private:
  Tensor logits_, log_p_;
};

/// Independent normals per element: mean and log std of the same shape [..., D].
class DiagGaussian {
 public:
  DiagGaussian(Tensor mean, Tensor log_std);
  /// Sum over the last dim of the elementwise log-density of `x`.
  Tensor log_prob(const Tensor& x) const;
  Tensor entropy() const;
  /// mean + std * noise (noise: standard normal of the mean's shape; undefined: drawn with
  /// ember's generator); differentiable in mean and log std.
  Tensor rsample(const Tensor& noise = {}) const;
  const Tensor& mean() const { return mean_; }
  const Tensor& log_std() const { return log_std_; }

 private:
  Tensor mean_, log_std_;
};

/// tanh(u) * scale + bias with u ~ DiagGaussian: actions inside [bias - scale, bias + scale].
class TanhGaussian {
 public:
  /// `scale` and `bias` per action element (empty: 1 and 0), as (high - low) / 2 and
  /// (high + low) / 2 of a Box.
  TanhGaussian(Tensor mean, Tensor log_std, std::vector<float> scale = {}, std::vector<float> bias = {});
  /// A reparameterised action and its log-probability (with the tanh and scale corrections,
  /// summed over the last dim).
  std::pair<Tensor, Tensor> rsample(const Tensor& noise = {}) const;
  /// The deterministic action tanh(mean) * scale + bias.
  Tensor mode() const;

 private:
  Tensor squash(const Tensor& u) const;
  DiagGaussian base_;
  Tensor scale_, bias_;
  double log_scale_sum_ = 0;
};

/// target <- tau * source + (1 - tau) * target for every parameter and floating buffer (no
/// history). tau = 1 copies. The modules must have the same structure.
void polyak_update(nn::Module& target, const nn::Module& source, double tau);
/// polyak_update with tau = 1.
inline void hard_update(nn::Module& target, const nn::Module& source) { polyak_update(target, source, 1.0); }

}  // namespace ember::rl

#pragma once
// Running statistics (Chan et al.'s parallel mean/variance update, as Gymnasium's RunningMeanStd)
// and batch normalisation of advantages.
#include <cstdint>
#include <span>
#include <vector>

#include "ember/tensor.h"

namespace ember::rl {

/// Per-element running mean and (population) variance of a stream of vectors. Starts, like
/// Gymnasium's, at mean 0, variance 1 and a count of `epsilon`.
class RunningMeanStd {
 public:
  explicit RunningMeanStd(int64_t size = 1, double epsilon = 1e-4);
  /// Adds `batch` rows of size() values each (x.size() == batch * size()).
  void update(std::span<const float> x, int64_t batch = 1);
  void update(std::span<const double> x, int64_t batch = 1);
  /// (x - mean) / sqrt(var + eps), elementwise, into `out` (which may be `x`).
  void normalize(std::span<const float> x, std::span<float> out, double eps = 1e-8) const;
  int64_t size() const { return int64_t(mean_.size()); }
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& var() const { return var_; }
  double count() const { return count_; }
  /// Replaces the statistics (restoring a checkpoint).
  void set(std::vector<double> mean, std::vector<double> var, double count);

 private:
  template <class T> void update_impl(std::span<const T> x, int64_t batch);
  std::vector<double> mean_, var_;
  double count_;
};

/// (x - mean(x)) / (std(x) + eps) over all elements, with the unbiased std as PPO
/// implementations use (a tensor of one element is only centred).
Tensor normalize_advantages(const Tensor& x, double eps = 1e-8);

}  // namespace ember::rl

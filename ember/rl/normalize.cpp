#include "ember/rl/normalize.h"

#include <cmath>

#include "ember/error.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"
#include "ember/ops/binary.h"

namespace ember::rl {

RunningMeanStd::RunningMeanStd(int64_t size, double epsilon)
    : mean_(size_t(size), 0.0), var_(size_t(size), 1.0), count_(epsilon) {
  if (size < 1)
    detail::throw_value("rl.RunningMeanStd", "expected size >= 1, found " + std::to_string(size));
}

template <class T> void RunningMeanStd::update_impl(std::span<const T> x, int64_t batch) {
  const size_t n = mean_.size();
  if (batch < 1 || x.size() != n * size_t(batch))
    detail::throw_value("rl.RunningMeanStd.update",
                        "expected " + std::to_string(batch) + " rows of " + std::to_string(n) +
                            " values, found " + std::to_string(x.size()) + " values");
  const double bc = double(batch), tot = count_ + bc;
  for (size_t j = 0; j < n; ++j) {
    double bm = 0;
    for (int64_t b = 0; b < batch; ++b) bm += double(x[size_t(b) * n + j]);
    bm /= bc;
    double bv = 0;
    for (int64_t b = 0; b < batch; ++b) {
      const double d = double(x[size_t(b) * n + j]) - bm;
      bv += d * d;
    }
    bv /= bc;
    const double delta = bm - mean_[j];
    const double m2 = var_[j] * count_ + bv * bc + delta * delta * count_ * bc / tot;
    mean_[j] = mean_[j] + delta * bc / tot;
    var_[j] = m2 / tot;
  }
  count_ = tot;
}

void RunningMeanStd::update(std::span<const float> x, int64_t batch) { update_impl(x, batch); }
void RunningMeanStd::update(std::span<const double> x, int64_t batch) { update_impl(x, batch); }

void RunningMeanStd::normalize(std::span<const float> x, std::span<float> out, double eps) const {
  const size_t n = mean_.size();
  if (x.size() % n != 0 || out.size() != x.size())
    detail::throw_value("rl.RunningMeanStd.normalize",
                        "expected rows of " + std::to_string(n) + " values, found " +
                            std::to_string(x.size()) + " values into " +
                            std::to_string(out.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t j = i % n;
    out[i] = float((double(x[i]) - mean_[j]) / std::sqrt(var_[j] + eps));
  }
}

void RunningMeanStd::set(std::vector<double> mean, std::vector<double> var, double count) {
  if (mean.size() != mean_.size() || var.size() != var_.size() || !(count > 0))
    detail::throw_value("rl.RunningMeanStd.set",
                        "expected " + std::to_string(mean_.size()) +
                            " means and variances and a count > 0, found " +
                            std::to_string(mean.size()) + ", " + std::to_string(var.size()) +
                            " and " + std::to_string(count));
  mean_ = std::move(mean);
  var_ = std::move(var);
  count_ = count;
}

Tensor normalize_advantages(const Tensor& x, double eps) {
  Tensor centred = x - ember::mean(x);
  if (x.numel() < 2) return centred;
  return centred / (ember::std(x) + eps);
}

}  // namespace ember::rl

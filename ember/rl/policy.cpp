#include "ember/rl/policy.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/nn/functional.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember::rl {

double LinearSchedule::at(int64_t step) const {
  if (steps <= 0 || step >= steps) return end;
  return start + (end - start) * double(std::max<int64_t>(step, 0)) / double(steps);
}

std::vector<int64_t> epsilon_greedy(const Tensor& q, double epsilon, Rng& rng) {
  if (q.dim() != 1 && q.dim() != 2)
    detail::throw_shape("rl.epsilon_greedy", "expected Q-values [N, A] or [A], found " + shape_str(q.shape()));
  const int64_t rows = q.dim() == 2 ? q.size(0) : 1, a = q.size(-1);
  std::vector<float> v = q.to_vector<float>();
  std::vector<int64_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    if (rng.uniform() < epsilon) {
      out[size_t(r)] = rng.integer(a);
    } else {
      const float* row = v.data() + r * a;
      out[size_t(r)] = int64_t(std::max_element(row, row + a) - row);
    }
  }
  return out;
}

Categorical::Categorical(Tensor logits) : logits_(std::move(logits)) {
  if (logits_.dim() < 1 || logits_.size(-1) < 1)
    detail::throw_shape("rl.Categorical", "expected logits [..., K] with K >= 1, found " +
                                              shape_str(logits_.shape()));
  log_p_ = log_softmax(logits_, -1);
}

Tensor Categorical::log_prob(const Tensor& actions) const {
  Shape want = logits_.shape();
  want.resize(want.size() - 1);
  if (actions.shape() != want)
    detail::throw_shape("rl.Categorical.log_prob", "expected actions of shape " + shape_str(want) +
                                                       ", found " + shape_str(actions.shape()));
  return gather(log_p_, -1, actions.to(DType::I64).unsqueeze(-1)).squeeze(-1);
}

Tensor Categorical::entropy() const { return -(exp(log_p_) * log_p_).sum({-1}); }

Tensor Categorical::probs() const { return exp(log_p_); }

std::vector<int64_t> Categorical::sample(Rng& rng) const {
  const int64_t k = logits_.size(-1), rows = logits_.numel() / k;
  std::vector<float> p = exp(log_p_.detach()).to_vector<float>();
  std::vector<int64_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = p.data() + r * k;
    const double u = rng.uniform();
    double c = 0;
    int64_t pick = k - 1;
    for (int64_t j = 0; j < k; ++j) {
      c += double(row[j]);
      if (u < c) {
        pick = j;
        break;
      }
    }
    out[size_t(r)] = pick;
  }
  return out;
}

std::vector<int64_t> Categorical::mode() const {
  return argmax(logits_.detach(), -1).to_vector<int64_t>();
}

DiagGaussian::DiagGaussian(Tensor mean, Tensor log_std) : mean_(std::move(mean)), log_std_(std::move(log_std)) {
  if (mean_.dim() < 1 || mean_.shape() != log_std_.shape())
    detail::throw_shape("rl.DiagGaussian", "expected mean and log_std of one shape [..., D], found " +
                                               shape_str(mean_.shape()) + " and " + shape_str(log_std_.shape()));
}

Tensor DiagGaussian::log_prob(const Tensor& x) const {
  constexpr double kHalfLog2Pi = 0.91893853320467274178;  // log(2 pi) / 2
  Tensor z = (x - mean_) * exp(-log_std_);
  return (z * z * -0.5 - log_std_ - kHalfLog2Pi).sum({-1});
}

Tensor DiagGaussian::entropy() const {
  constexpr double kHalfLog2PiE = 1.41893853320467274178;  // (1 + log(2 pi)) / 2
  return (log_std_ + kHalfLog2PiE).sum({-1});
}

Tensor DiagGaussian::rsample(const Tensor& noise) const {
  Tensor eps = noise.defined() ? noise : randn(mean_.shape(), {.dtype = mean_.dtype(), .device = mean_.device()});
  if (eps.shape() != mean_.shape())
    detail::throw_shape("rl.DiagGaussian.rsample", "expected noise of shape " + shape_str(mean_.shape()) +
                                                       ", found " + shape_str(eps.shape()));
  return mean_ + exp(log_std_) * eps;
}

TanhGaussian::TanhGaussian(Tensor mean, Tensor log_std, std::vector<float> scale, std::vector<float> bias)
    : base_(std::move(mean), std::move(log_std)) {
  const int64_t d = base_.mean().size(-1);
  if (scale.empty()) scale.assign(size_t(d), 1.f);
  if (bias.empty()) bias.assign(size_t(d), 0.f);
  if (int64_t(scale.size()) != d || int64_t(bias.size()) != d)
    detail::throw_shape("rl.TanhGaussian", "expected " + std::to_string(d) + " scales and biases, found " +
                                               std::to_string(scale.size()) + " and " + std::to_string(bias.size()));
  for (float s : scale) {
    if (!(s > 0)) detail::throw_value("rl.TanhGaussian", "expected scales > 0, found " + std::to_string(s));
    log_scale_sum_ += std::log(double(s));
  }
  const TensorOptions o{.dtype = base_.mean().dtype(), .device = base_.mean().device()};
  scale_ = tensor(scale, {d}, o.dtype, o.device);
  bias_ = tensor(bias, {d}, o.dtype, o.device);
}

Tensor TanhGaussian::squash(const Tensor& u) const { return tanh(u) * scale_ + bias_; }

std::pair<Tensor, Tensor> TanhGaussian::rsample(const Tensor& noise) const {
  Tensor u = base_.rsample(noise);
  // log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), stable for large |u|.
  constexpr double kLog2 = 0.69314718055994530942;
  Tensor correction = ((kLog2 - u - softplus(u * -2.0)) * 2.0).sum({-1});
  Tensor logp = base_.log_prob(u) - correction - log_scale_sum_;
  return {squash(u), logp};
}

Tensor TanhGaussian::mode() const { return squash(base_.mean()); }

void polyak_update(nn::Module& target, const nn::Module& source, double tau) {
  if (!(tau >= 0 && tau <= 1))
    detail::throw_value("rl.polyak_update", "expected tau in [0, 1], found " + std::to_string(tau));
  auto t = target.state_dict(), s = source.state_dict();
  if (t.size() != s.size())
    detail::throw_value("rl.polyak_update", "expected modules of the same structure, found " +
                                                std::to_string(t.size()) + " and " + std::to_string(s.size()) +
                                                " tensors");
  NoGradGuard no_grad;
  for (size_t i = 0; i < t.size(); ++i) {
    Tensor& dst = t[i].second;
    const Tensor& src = s[i].second;
    if (t[i].first != s[i].first || dst.shape() != src.shape())
      detail::throw_value("rl.polyak_update", "expected matching tensors, found '" + t[i].first + "' " +
                                                  shape_str(dst.shape()) + " and '" + s[i].first + "' " +
                                                  shape_str(src.shape()));
    if (!is_floating(dst.dtype()) || tau == 1.0) {
      dst.copy_(src);
    } else {
      dst.copy_(dst * (1.0 - tau) + src * tau);
    }
  }
}

}  // namespace ember::rl

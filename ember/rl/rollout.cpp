#include "ember/rl/rollout.h"

#include <algorithm>
#include <numeric>

#include "ember/error.h"

namespace ember::rl {
namespace {

void check_size(const char* what, size_t got, size_t want) {
  if (got != want)
    detail::throw_value("rl.RolloutStorage.add", std::string("expected ") + what + " of " +
                                                     std::to_string(want) + " values, found " +
                                                     std::to_string(got));
}

}  // namespace

RolloutStorage::RolloutStorage(RolloutOptions o) : o_(o) {
  if (o.steps < 1 || o.num_envs < 1 || o.obs_size < 1 || o.action_size < 1)
    detail::throw_value("rl.RolloutStorage", "expected steps, num_envs, obs_size and action_size >= 1");
  const auto tn = size_t(o.steps * o.num_envs);
  obs_.resize(tn * size_t(o.obs_size));
  actions_.resize(tn * size_t(o.discrete ? 1 : o.action_size));
  log_probs_.resize(tn);
  values_.resize(tn);
  rewards_.resize(tn);
  bootstrap_.resize(tn);
  dones_.resize(tn);
  adv_.resize(tn);
  ret_.resize(tn);
}

void RolloutStorage::add(const RolloutStep& s) {
  if (full())
    detail::throw_value("rl.RolloutStorage.add", "expected room for a step, found all " +
                                                     std::to_string(o_.steps) + " steps stored (clear() it)");
  const auto n = size_t(o_.num_envs), act = size_t(o_.discrete ? 1 : o_.action_size);
  check_size("obs", s.obs.size(), n * size_t(o_.obs_size));
  check_size("actions", s.actions.size(), n * act);
  check_size("log_probs", s.log_probs.size(), n);
  check_size("values", s.values.size(), n);
  check_size("rewards", s.rewards.size(), n);
  check_size("terminated", s.terminated.size(), n);
  check_size("truncated", s.truncated.size(), n);
  if (!s.final_values.empty()) check_size("final_values", s.final_values.size(), n);
  const size_t base = size_t(t_) * n;
  std::copy(s.obs.begin(), s.obs.end(), obs_.begin() + int64_t(base * size_t(o_.obs_size)));
  std::copy(s.actions.begin(), s.actions.end(), actions_.begin() + int64_t(base * act));
  std::copy(s.log_probs.begin(), s.log_probs.end(), log_probs_.begin() + int64_t(base));
  std::copy(s.values.begin(), s.values.end(), values_.begin() + int64_t(base));
  for (size_t i = 0; i < n; ++i) {
    rewards_[base + i] = float(s.rewards[i]);
    dones_[base + i] = s.terminated[i] || s.truncated[i];
    // A truncated episode's last reward is followed by the value of where it stopped.
    bootstrap_[base + i] =
        s.truncated[i] && !s.terminated[i] && !s.final_values.empty() ? s.final_values[i] : 0.f;
  }
  ++t_;
}

void compute_gae(std::span<const float> rewards, std::span<const float> values,
                 std::span<const uint8_t> dones, std::span<const float> last_values, int64_t num_envs,
                 double gamma, double lambda, std::span<float> advantages, std::span<float> returns) {
  const auto n = size_t(num_envs);
  if (n == 0 || rewards.size() % n != 0 || values.size() != rewards.size() ||
      dones.size() != rewards.size() || last_values.size() != n ||
      advantages.size() != rewards.size() || returns.size() != rewards.size())
    detail::throw_value("rl.compute_gae", "expected rewards, values, dones, advantages and returns of "
                                          "T * num_envs values and last_values of num_envs, found " +
                                              std::to_string(rewards.size()) + ", " +
                                              std::to_string(values.size()) + ", " +
                                              std::to_string(dones.size()) + ", " +
                                              std::to_string(advantages.size()) + ", " +
                                              std::to_string(returns.size()) + " and " +
                                              std::to_string(last_values.size()));
  const size_t steps = rewards.size() / n;
  for (size_t i = 0; i < n; ++i) {
    double gae = 0;
    for (size_t t = steps; t-- > 0;) {
      const size_t k = t * n + i;
      const double next_value = t + 1 == steps ? last_values[i] : values[k + n];
      const double nonterminal = dones[k] ? 0.0 : 1.0;
      const double delta = double(rewards[k]) + gamma * next_value * nonterminal - double(values[k]);
      gae = delta + gamma * lambda * nonterminal * gae;
      advantages[k] = float(gae);
      returns[k] = float(gae + double(values[k]));
    }
  }
}

void RolloutStorage::compute_returns(std::span<const float> last_values, double gamma, double lambda) {
  if (!full())
    detail::throw_value("rl.RolloutStorage.compute_returns",
                        "expected " + std::to_string(o_.steps) + " steps stored, found " +
                            std::to_string(t_));
  std::vector<float> r(rewards_.size());
  for (size_t k = 0; k < r.size(); ++k) r[k] = float(double(rewards_[k]) + gamma * double(bootstrap_[k]));
  compute_gae(r, values_, dones_, last_values, o_.num_envs, gamma, lambda, adv_, ret_);
}

std::vector<RolloutBatch> RolloutStorage::minibatches(int64_t count, Rng& rng,
                                                      std::optional<Device> device) const {
  const int64_t total = t_ * o_.num_envs;
  if (count < 1 || count > total)
    detail::throw_value("rl.RolloutStorage.minibatches", "expected between 1 and " + std::to_string(total) +
                                                             " minibatches, found " + std::to_string(count));
  const Device d = resolve_device(device);
  std::vector<int64_t> perm(static_cast<size_t>(total));
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = total - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(rng.integer(i + 1))]);
  const int64_t act = o_.discrete ? 1 : o_.action_size, size = total / count;
  std::vector<RolloutBatch> out;
  for (int64_t m = 0; m < count; ++m) {
    const int64_t begin = m * size, end = m + 1 == count ? total : begin + size, b = end - begin;
    const auto nb = static_cast<size_t>(b);
    std::vector<float> obs(nb * size_t(o_.obs_size)), acts(nb * size_t(act)), lp(nb), v(nb), adv(nb), ret(nb);
    for (int64_t j = 0; j < b; ++j) {
      const auto k = size_t(perm[size_t(begin + j)]);
      std::copy_n(obs_.begin() + int64_t(k) * o_.obs_size, o_.obs_size, obs.begin() + j * o_.obs_size);
      std::copy_n(actions_.begin() + int64_t(k) * act, act, acts.begin() + j * act);
      lp[size_t(j)] = log_probs_[k], v[size_t(j)] = values_[k];
      adv[size_t(j)] = adv_[k], ret[size_t(j)] = ret_[k];
    }
    RolloutBatch mb;
    mb.obs = from_blob_copy(obs.data(), DType::F32, {b, o_.obs_size}, DType::F32, d);
    if (o_.discrete)
      mb.actions = from_blob_copy(acts.data(), DType::F32, {b}, DType::I64, d);
    else
      mb.actions = from_blob_copy(acts.data(), DType::F32, {b, act}, DType::F32, d);
    mb.log_probs = from_blob_copy(lp.data(), DType::F32, {b}, DType::F32, d);
    mb.values = from_blob_copy(v.data(), DType::F32, {b}, DType::F32, d);
    mb.advantages = from_blob_copy(adv.data(), DType::F32, {b}, DType::F32, d);
    mb.returns = from_blob_copy(ret.data(), DType::F32, {b}, DType::F32, d);
    out.push_back(std::move(mb));
  }
  return out;
}

}  // namespace ember::rl

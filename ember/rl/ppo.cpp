#include "ember/rl/ppo.h"

#include <algorithm>
#include <cmath>

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"
#include "ember/optim/clip.h"
#include "ember/rl/policy.h"

namespace ember::rl {
namespace {
constexpr const char* kKind = "rl-ppo-checkpoint";
constexpr float kObsClip = 10.f;  // normalised observations are clipped like SB3's VecNormalize
}  // namespace

PPO::PPO(EnvFactory make_env, PPOOptions o)
    : make_(std::move(make_env)), o_(std::move(o)), rng_(o_.seed ^ 0x9E3779B97F4A7C15ull), metrics_(o_.metrics) {
  if (o_.num_envs < 1 || o_.n_steps < 1 || o_.epochs < 1 || o_.minibatches < 1)
    detail::throw_value("rl.PPO", "expected num_envs, n_steps, epochs and minibatches >= 1");
  envs_ = std::make_unique<VectorEnv>(o_.num_envs, make_, VectorEnvOptions{.threads = o_.threads});
  const Space& as = envs_->single_action_space();
  discrete_ = as.kind() == Space::Kind::Discrete;
  if (!discrete_ && as.kind() != Space::Kind::Box)
    detail::throw_value("rl.PPO", "expected a Discrete or Box action space, found " + as.str());
  if (discrete_ && as.start() != 0)
    detail::throw_value("rl.PPO", "expected a Discrete action space starting at 0, found " + as.str());
  obs_size_ = envs_->obs_size();
  act_size_ = discrete_ ? as.n() : as.flat_size();
  obs_rms_ = RunningMeanStd(obs_size_);
  DeviceGuard on(o_.device);
  manual_seed(o_.seed);
  actor_ = std::make_shared<MLP>(MLPOptions{.in = obs_size_, .out = act_size_, .hidden = o_.hidden, .activation = o_.activation});
  critic_ = std::make_shared<MLP>(MLPOptions{.in = obs_size_, .out = 1, .hidden = o_.hidden, .activation = o_.activation});
  if (!discrete_) log_std_ = full({act_size_}, o_.init_log_std).requires_grad_();
  opt_ = std::make_unique<optim::Adam>(params(), optim::AdamOptions{.lr = o_.lr, .eps = 1e-5});
  rollout_ = std::make_unique<RolloutStorage>(RolloutOptions{.steps = o_.n_steps, .num_envs = o_.num_envs,
                                                             .obs_size = obs_size_, .discrete = discrete_,
                                                             .action_size = discrete_ ? 1 : act_size_});
  auto o0 = envs_->reset(o_.seed);
  obs_.assign(o0.begin(), o0.end());
  ep_ret_.assign(size_t(o_.num_envs), 0.0);
  ep_len_.assign(size_t(o_.num_envs), 0);
}

std::vector<Tensor> PPO::params() const {
  std::vector<Tensor> p = actor_->parameters();
  for (const Tensor& t : critic_->parameters()) p.push_back(t);
  if (log_std_.defined()) p.push_back(log_std_);
  return p;
}

Tensor PPO::normalized(std::span<const float> obs, int64_t rows, bool update) {
  if (!o_.normalize_obs) return from_blob_copy(obs.data(), DType::F32, {rows, obs_size_}, DType::F32, o_.device);
  if (update) obs_rms_.update(obs, rows);
  std::vector<float> x(obs.size());
  obs_rms_.normalize(obs, x);
  for (float& v : x) v = std::clamp(v, -kObsClip, kObsClip);
  return from_blob_copy(x.data(), DType::F32, {rows, obs_size_}, DType::F32, o_.device);
}

ActionValue PPO::act(std::span<const float> obs) {
  NoGradGuard no_grad;
  DeviceGuard on(o_.device);
  Tensor out = (*actor_)(normalized(obs, 1, false));
  ActionValue a;
  if (discrete_) {
    a.kind = Action::Kind::Index;
    a.index = argmax(out, 1).item<int64_t>();
  } else {
    const Space& as = envs_->single_action_space();
    a.kind = Action::Kind::Values;
    a.values = out.to_vector<float>();
    for (size_t k = 0; k < a.values.size(); ++k) a.values[k] = std::clamp(a.values[k], as.low()[k], as.high()[k]);
  }
  return a;
}

Evaluation PPO::evaluate(int64_t episodes, uint64_t seed) {
  return rl::evaluate(make_, [&](std::span<const float> obs) { return act(obs); }, episodes, seed);
}

void PPO::collect() {
  const int64_t n = o_.num_envs;
  const Space& as = envs_->single_action_space();
  rollout_->clear();
  NoGradGuard no_grad;
  for (int64_t t = 0; t < o_.n_steps; ++t) {
    Tensor x = normalized(obs_, n, true);
    std::vector<float> xs = x.to_vector<float>();
    Tensor out = (*actor_)(x);
    std::vector<float> values = (*critic_)(x).squeeze(-1).to_vector<float>();
    std::vector<float> acts, logps;
    const VecStep* s;
    if (discrete_) {
      Categorical dist(out);
      std::vector<int64_t> a = dist.sample(rng_);
      logps = dist.log_prob(tensor(a, {n}, DType::I64, o_.device)).to_vector<float>();
      acts.assign(a.begin(), a.end());
      s = &envs_->step(a);
    } else {
      std::vector<float> noise(size_t(n * act_size_));
      for (float& z : noise) z = float(rng_.normal());
      Tensor eps = tensor(noise, {n, act_size_}, DType::F32, o_.device);
      DiagGaussian dist(out, log_std_.detach().expand({n, act_size_}));
      Tensor a = dist.rsample(eps);
      logps = dist.log_prob(a).to_vector<float>();
      acts = a.to_vector<float>();
      std::vector<float> clipped = acts;
      for (size_t k = 0; k < clipped.size(); ++k) {
        const size_t j = k % size_t(act_size_);
        clipped[k] = std::clamp(clipped[k], as.low()[j], as.high()[j]);
      }
      s = &envs_->step(clipped);
    }
    // Truncated episodes bootstrap from the value of where they stopped.
    std::vector<float> final_values(size_t(n), 0.f);
    std::vector<int64_t> cut;
    for (int64_t i = 0; i < n; ++i)
      if (s->truncated[size_t(i)] && !s->terminated[size_t(i)]) cut.push_back(i);
    if (!cut.empty()) {
      std::vector<float> rows;
      for (int64_t i : cut)
        rows.insert(rows.end(), s->final_obs.begin() + i * obs_size_, s->final_obs.begin() + (i + 1) * obs_size_);
      std::vector<float> v = (*critic_)(normalized(rows, int64_t(cut.size()), false)).squeeze(-1).to_vector<float>();
      for (size_t k = 0; k < cut.size(); ++k) final_values[size_t(cut[k])] = v[k];
    }
    rollout_->add({xs, acts, logps, values, s->rewards, s->terminated, s->truncated, final_values});
    for (int64_t i = 0; i < n; ++i) {
      ep_ret_[size_t(i)] += s->rewards[size_t(i)];
      ++ep_len_[size_t(i)];
      if (s->done(i)) {
        metrics_.episode(ep_ret_[size_t(i)], ep_len_[size_t(i)]);
        ep_ret_[size_t(i)] = 0, ep_len_[size_t(i)] = 0;
      }
    }
    obs_.assign(s->obs.begin(), s->obs.end());
    step_ += n;
    metrics_.step(step_);
  }
  std::vector<float> last = (*critic_)(normalized(obs_, n, false)).squeeze(-1).to_vector<float>();
  rollout_->compute_returns(last, o_.gamma, o_.gae_lambda);
}

void PPO::update() {
  const int64_t iterations = std::max<int64_t>(o_.total_steps / (o_.num_envs * o_.n_steps), 1);
  if (o_.anneal_lr) opt_->set_lr(0, o_.lr * (1.0 - double(iteration_) / double(iterations)));
  const std::vector<Tensor> ps = params();
  for (int64_t e = 0; e < o_.epochs; ++e) {
    for (const RolloutBatch& mb : rollout_->minibatches(o_.minibatches, rng_, o_.device)) {
      Tensor out = (*actor_)(mb.obs);
      Tensor logp, entropy;
      if (discrete_) {
        Categorical dist(out);
        logp = dist.log_prob(mb.actions);
        entropy = dist.entropy().mean();
      } else {
        DiagGaussian dist(out, log_std_.expand(out.shape()));
        logp = dist.log_prob(mb.actions);
        entropy = dist.entropy().mean();
      }
      Tensor log_ratio = logp - mb.log_probs;
      Tensor ratio = exp(log_ratio);
      Tensor adv = o_.normalize_advantages ? normalize_advantages(mb.advantages) : mb.advantages;
      Tensor pg = maximum(-adv * ratio, -adv * clamp(ratio, 1.0 - o_.clip, 1.0 + o_.clip)).mean();
      Tensor v = (*critic_)(mb.obs).squeeze(-1);
      Tensor v_loss;
      if (o_.clip_value) {
        Tensor v_clipped = mb.values + clamp(v - mb.values, -o_.clip, o_.clip);
        v_loss = maximum(square(v - mb.returns), square(v_clipped - mb.returns)).mean() * 0.5;
      } else {
        v_loss = square(v - mb.returns).mean() * 0.5;
      }
      Tensor loss = pg - entropy * o_.ent_coef + v_loss * o_.vf_coef;
      Gradients g = loss.backward();
      if (o_.max_grad_norm > 0) optim::clip_grad_norm(g, ps, o_.max_grad_norm);
      opt_->step(g);
      {
        NoGradGuard no_grad;
        metrics_.add("loss.policy", pg.item<double>());
        metrics_.add("loss.value", v_loss.item<double>());
        metrics_.add("entropy", entropy.item<double>());
        metrics_.add("approx_kl", ((ratio - 1.0) - log_ratio).mean().item<double>());
      }
    }
  }
  ++iteration_;
}

void PPO::evaluate_and_keep_best() {
  Evaluation e = evaluate(o_.eval_episodes, o_.seed * 1000003 + uint64_t(step_));
  metrics_.add("eval.return", e.mean);
  best_.offer(e.mean, *actor_, log_std_);
}

void PPO::learn(std::optional<int64_t> until) {
  const int64_t end = std::min(o_.total_steps, until.value_or(o_.total_steps));
  DeviceGuard on(o_.device);
  metrics_.start(o_.total_steps, step_);
  const int64_t per_iter = o_.num_envs * o_.n_steps;
  while (step_ + per_iter <= end) {
    const int64_t before = step_;
    collect();
    update();
    if (o_.eval_every > 0 && step_ / o_.eval_every != before / o_.eval_every) evaluate_and_keep_best();
  }
  if (step_ + per_iter > o_.total_steps) {
    metrics_.finish();
    if (!best_.empty()) {
      actor_->load_state_dict(best_.params);
      if (log_std_.defined()) {
        NoGradGuard no_grad;
        log_std_.copy_(best_.extra);
      }
    }
  }
}

void PPO::save(const std::string& path) const {
  Checkpoint c;
  c.put("actor", *actor_);
  c.put("critic", *critic_);
  if (log_std_.defined()) c.state().tensors["log_std"] = log_std_.detach().clone();
  c.put("optimizer", *opt_);
  for (int64_t i = 0; i < o_.num_envs; ++i) c.put_env("env." + std::to_string(i), envs_->env(i));
  c.put_word("rng", rng_.state());
  c.put("obs", obs_);
  c.state().tensors["episode.return"] = tensor(ep_ret_, {o_.num_envs}, DType::F64, Device::flex());
  c.state().tensors["episode.length"] = tensor(ep_len_, {o_.num_envs}, DType::I64, Device::flex());
  c.state().tensors["obs_rms.mean"] = tensor(obs_rms_.mean(), {obs_size_}, DType::F64, Device::flex());
  c.state().tensors["obs_rms.var"] = tensor(obs_rms_.var(), {obs_size_}, DType::F64, Device::flex());
  c.put_scalar("obs_rms.count", obs_rms_.count());
  c.put_scalar("step", double(step_));
  c.put_scalar("iteration", double(iteration_));
  best_.save(c);
  c.put(metrics_);
  c.save(path, kKind);
}

void PPO::load(const std::string& path) {
  Checkpoint c = Checkpoint::load(path, kKind);
  c.get("actor", *actor_);
  c.get("critic", *critic_);
  if (log_std_.defined()) {
    NoGradGuard no_grad;
    log_std_.copy_(c.state().tensors.at("log_std"));
  }
  c.get("optimizer", *opt_);
  for (int64_t i = 0; i < o_.num_envs; ++i) c.get_env("env." + std::to_string(i), envs_->env(i));
  rng_.set_state(c.get_word("rng"));
  obs_ = c.get_floats("obs");
  ep_ret_ = c.state().tensors.at("episode.return").to_vector<double>();
  ep_len_ = c.state().tensors.at("episode.length").to_vector<int64_t>();
  obs_rms_.set(c.state().tensors.at("obs_rms.mean").to_vector<double>(),
               c.state().tensors.at("obs_rms.var").to_vector<double>(), c.get_scalar("obs_rms.count"));
  step_ = int64_t(c.get_scalar("step"));
  iteration_ = int64_t(c.get_scalar("iteration"));
  best_.load(c, *actor_);
  c.get(metrics_);
}

}  // namespace ember::rl

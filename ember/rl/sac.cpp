#include "ember/rl/sac.h"

#include <algorithm>
#include <cmath>

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"
#include "ember/rl/policy.h"

namespace ember::rl {
namespace {
constexpr const char* kKind = "rl-sac-checkpoint";
constexpr double kLogStdMin = -5, kLogStdMax = 2;
}  // namespace

SAC::SAC(EnvFactory make_env, SACOptions o)
    : make_(std::move(make_env)), o_(std::move(o)), rng_(o_.seed ^ 0xD1B54A32D192ED03ull), metrics_(o_.metrics) {
  auto env = make_(0);
  const Space& as = env->action_space();
  if (as.kind() != Space::Kind::Box || !as.bounded())
    detail::throw_value("rl.SAC", "expected a bounded Box action space, found " + as.str());
  obs_size_ = env->observation_space().flat_size();
  act_size_ = as.flat_size();
  for (int64_t k = 0; k < act_size_; ++k) {
    scale_.push_back((as.high()[size_t(k)] - as.low()[size_t(k)]) / 2);
    bias_.push_back((as.high()[size_t(k)] + as.low()[size_t(k)]) / 2);
  }
  DeviceGuard on(o_.device);
  manual_seed(o_.seed);
  actor_ = std::make_shared<MLP>(MLPOptions{.in = obs_size_, .out = 2 * act_size_, .hidden = o_.hidden});
  auto critic = [&] { return std::make_shared<MLP>(MLPOptions{.in = obs_size_ + act_size_, .out = 1, .hidden = o_.hidden}); };
  q1_ = critic(), q2_ = critic(), q1_target_ = critic(), q2_target_ = critic();
  hard_update(*q1_target_, *q1_);
  hard_update(*q2_target_, *q2_);
  q1_target_->freeze();
  q2_target_->freeze();
  log_alpha_ = full({1}, std::log(o_.alpha)).requires_grad_();
  actor_opt_ = std::make_unique<optim::Adam>(actor_->parameters(), optim::AdamOptions{.lr = o_.lr});
  std::vector<Tensor> cp = q1_->parameters();
  for (const Tensor& t : q2_->parameters()) cp.push_back(t);
  critic_opt_ = std::make_unique<optim::Adam>(cp, optim::AdamOptions{.lr = o_.lr});
  alpha_opt_ = std::make_unique<optim::Adam>(std::vector<Tensor>{log_alpha_}, optim::AdamOptions{.lr = o_.lr});
  buffer_ = std::make_unique<ReplayBuffer>(ReplayOptions{.capacity = o_.buffer_size, .obs_size = obs_size_,
                                                         .discrete = false, .action_size = act_size_});
  loop_.start(std::move(env), o_.seed);
}

double SAC::alpha() const { return std::exp(log_alpha_.detach().item<double>()); }

std::pair<Tensor, Tensor> SAC::sample(const Tensor& obs) {
  Tensor out = (*actor_)(obs);
  Tensor mean = out.narrow(1, 0, act_size_);
  Tensor log_std = clamp(out.narrow(1, act_size_, act_size_), kLogStdMin, kLogStdMax);
  const int64_t b = obs.size(0);
  std::vector<float> noise(size_t(b * act_size_));
  for (float& z : noise) z = float(rng_.normal());
  TanhGaussian dist(mean, log_std, scale_, bias_);
  return dist.rsample(tensor(noise, {b, act_size_}, DType::F32, o_.device));
}

Tensor SAC::q(MLP& net, const Tensor& obs, const Tensor& act) { return net(cat({obs, act}, 1)).squeeze(-1); }

ActionValue SAC::act(std::span<const float> obs) {
  NoGradGuard no_grad;
  DeviceGuard on(o_.device);
  Tensor out = (*actor_)(from_blob_copy(obs.data(), DType::F32, {1, obs_size_}, DType::F32, o_.device));
  TanhGaussian dist(out.narrow(1, 0, act_size_), zeros({1, act_size_}), scale_, bias_);
  ActionValue a;
  a.kind = Action::Kind::Values;
  a.values = dist.mode().to_vector<float>();
  const Space& as = loop_.env->action_space();
  for (size_t k = 0; k < a.values.size(); ++k) a.values[k] = std::clamp(a.values[k], as.low()[k], as.high()[k]);
  return a;
}

Evaluation SAC::evaluate(int64_t episodes, uint64_t seed) {
  return rl::evaluate(make_, [&](std::span<const float> obs) { return act(obs); }, episodes, seed);
}

void SAC::train_step() {
  ReplayBatch b = buffer_->sample(o_.batch_size, rng_, o_.device);
  const double alpha = this->alpha();
  Tensor y;
  {
    NoGradGuard no_grad;
    auto [next_a, next_logp] = sample(b.next_obs);
    Tensor next_q = minimum(q(*q1_target_, b.next_obs, next_a), q(*q2_target_, b.next_obs, next_a)) - next_logp * alpha;
    y = b.rewards + b.discounts * (1.0 - b.dones) * next_q;
  }
  Tensor critic_loss = mse_loss(q(*q1_, b.obs, b.actions), y) + mse_loss(q(*q2_, b.obs, b.actions), y);
  critic_opt_->step(critic_loss.backward());

  auto [a, logp] = sample(b.obs);
  Tensor q_pi = minimum(q(*q1_, b.obs, a), q(*q2_, b.obs, a));
  Tensor actor_loss = (logp * alpha - q_pi).mean();
  actor_opt_->step(actor_loss.backward());

  if (o_.auto_alpha) {
    const double target = o_.target_entropy.value_or(-double(act_size_));
    Tensor alpha_loss = -(log_alpha_ * (logp.detach() + target)).mean();
    alpha_opt_->step(alpha_loss.backward());
  }
  polyak_update(*q1_target_, *q1_, o_.tau);
  polyak_update(*q2_target_, *q2_, o_.tau);
  metrics_.add("loss.critic", critic_loss.item<double>());
  metrics_.add("loss.actor", actor_loss.item<double>());
  metrics_.add("alpha", alpha);
}

void SAC::evaluate_and_keep_best() {
  Evaluation e = evaluate(o_.eval_episodes, o_.seed * 1000003 + uint64_t(step_));
  metrics_.add("eval.return", e.mean);
  best_.offer(e.mean, *actor_);
}

void SAC::learn(std::optional<int64_t> until) {
  const int64_t end = std::min(o_.total_steps, until.value_or(o_.total_steps));
  DeviceGuard on(o_.device);
  metrics_.start(o_.total_steps, step_);
  const Space& as = loop_.env->action_space();
  while (step_ < end) {
    ActionValue a;
    if (step_ < o_.learning_starts) {
      a = as.sample(rng_);
    } else {
      NoGradGuard no_grad;
      auto [t, lp] = sample(from_blob_copy(loop_.obs.data(), DType::F32, {1, obs_size_}, DType::F32, o_.device));
      a.kind = Action::Kind::Values;
      a.values = t.to_vector<float>();
      for (size_t k = 0; k < a.values.size(); ++k) a.values[k] = std::clamp(a.values[k], as.low()[k], as.high()[k]);
    }
    loop_.step(a.view(), metrics_, [&](const StepResult& r) {
      buffer_->add(loop_.obs, a.view(), r.reward, r.obs, r.terminated, o_.gamma);
    });
    ++step_;
    if (step_ >= o_.learning_starts && step_ % o_.train_freq == 0)
      for (int64_t k = 0; k < o_.gradient_steps; ++k) train_step();
    if (o_.eval_every > 0 && step_ % o_.eval_every == 0) evaluate_and_keep_best();
    metrics_.step(step_);
  }
  if (step_ >= o_.total_steps) {
    metrics_.finish();
    if (!best_.empty()) actor_->load_state_dict(best_.params);
  }
}

void SAC::save(const std::string& path) const {
  Checkpoint c;
  c.put("actor", *actor_);
  c.put("q1", *q1_);
  c.put("q2", *q2_);
  c.put("q1_target", *q1_target_);
  c.put("q2_target", *q2_target_);
  c.state().tensors["log_alpha"] = log_alpha_.detach().clone();
  c.put("actor_optimizer", *actor_opt_);
  c.put("critic_optimizer", *critic_opt_);
  c.put("alpha_optimizer", *alpha_opt_);
  c.put("buffer", buffer_->state_dict());
  loop_.save(c);
  c.put_word("rng", rng_.state());
  c.put_scalar("step", double(step_));
  best_.save(c);
  c.put(metrics_);
  c.save(path, kKind);
}

void SAC::load(const std::string& path) {
  Checkpoint c = Checkpoint::load(path, kKind);
  c.get("actor", *actor_);
  c.get("q1", *q1_);
  c.get("q2", *q2_);
  c.get("q1_target", *q1_target_);
  c.get("q2_target", *q2_target_);
  {
    NoGradGuard no_grad;
    log_alpha_.copy_(c.state().tensors.at("log_alpha"));
  }
  c.get("actor_optimizer", *actor_opt_);
  c.get("critic_optimizer", *critic_opt_);
  c.get("alpha_optimizer", *alpha_opt_);
  buffer_->load_state_dict(c.get_state("buffer"));
  loop_.load(c);
  rng_.set_state(c.get_word("rng"));
  step_ = int64_t(c.get_scalar("step"));
  best_.load(c, *actor_);
  c.get(metrics_);
}

}  // namespace ember::rl

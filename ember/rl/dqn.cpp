#include "ember/rl/dqn.h"

#include <cmath>

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/nn.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"
#include "ember/optim/clip.h"
#include "ember/rl/policy.h"

namespace ember::rl {
namespace {
constexpr const char* kKind = "rl-dqn-checkpoint";

Tensor obs_tensor(std::span<const float> obs, Device d) {
  return from_blob_copy(obs.data(), DType::F32, {1, int64_t(obs.size())}, DType::F32, d);
}
}  // namespace

QNetwork::QNetwork(const QNetworkOptions& o) : dueling_(o.dueling) {
  if (o.obs_size < 1 || o.actions < 1)
    detail::throw_value("rl.QNetwork", "expected obs_size and actions >= 1, found " + std::to_string(o.obs_size) +
                                           " and " + std::to_string(o.actions));
  if (!dueling_) {
    trunk_ = std::make_shared<MLP>(MLPOptions{.in = o.obs_size, .out = o.actions, .hidden = o.hidden});
    register_module("q", trunk_);
    return;
  }
  if (o.hidden.empty()) detail::throw_value("rl.QNetwork", "expected a hidden layer for the dueling heads, found none");
  std::vector<int64_t> trunk(o.hidden.begin(), o.hidden.end() - 1);
  trunk_ = std::make_shared<MLP>(
      MLPOptions{.in = o.obs_size, .out = o.hidden.back(), .hidden = trunk, .activate_last = true});
  value_ = std::make_shared<nn::Linear>(nn::LinearOptions{.in = o.hidden.back(), .out = 1});
  advantage_ = std::make_shared<nn::Linear>(nn::LinearOptions{.in = o.hidden.back(), .out = o.actions});
  register_module("trunk", trunk_);
  register_module("value", value_);
  register_module("advantage", advantage_);
}

Tensor QNetwork::forward(const Tensor& obs) {
  Tensor h = (*trunk_)(obs);
  if (!dueling_) return h;
  Tensor a = (*advantage_)(h);
  return (*value_)(h) + a - mean(a, {-1}, true);
}

DQN::DQN(EnvFactory make_env, DQNOptions o) : make_(std::move(make_env)), o_(std::move(o)), rng_(o_.seed ^ 0x5DEECE66Dull), metrics_(o_.metrics) {
  auto env = make_(0);
  const Space& as = env->action_space();
  if (as.kind() != Space::Kind::Discrete || as.start() != 0)
    detail::throw_value("rl.DQN", "expected a Discrete action space starting at 0, found " + as.str());
  o_.net.obs_size = env->observation_space().flat_size();
  o_.net.actions = as.n();
  DeviceGuard on(o_.device);
  manual_seed(o_.seed);
  q_ = std::make_shared<QNetwork>(o_.net);
  target_ = std::make_shared<QNetwork>(o_.net);
  hard_update(*target_, *q_);
  target_->freeze();
  opt_ = std::make_unique<optim::Adam>(q_->parameters(), optim::AdamOptions{.lr = o_.lr});
  ReplayOptions ro{.capacity = o_.buffer_size, .obs_size = o_.net.obs_size};
  if (o_.prioritized) buffer_ = std::make_unique<PrioritizedReplayBuffer>(ro, o_.per);
  else buffer_ = std::make_unique<ReplayBuffer>(ro);
  if (o_.n_step > 1) nstep_ = std::make_unique<NStepCollector>(o_.n_step, o_.gamma, 1);
  loop_.start(std::move(env), o_.seed);
}

int64_t DQN::act(std::span<const float> obs) {
  NoGradGuard no_grad;
  return argmax((*q_)(obs_tensor(obs, o_.device)), 1).item<int64_t>();
}

Evaluation DQN::evaluate(int64_t episodes, uint64_t seed) {
  return rl::evaluate(make_, [&](std::span<const float> obs) {
    ActionValue a;
    a.index = act(obs);
    return a;
  }, episodes, seed);
}

void DQN::train_step() {
  if (o_.prioritized)  // importance-sampling exponent from per.beta to 1 over the run
    static_cast<PrioritizedReplayBuffer&>(*buffer_).set_beta(
        o_.per.beta + (1.0 - o_.per.beta) * std::min(1.0, double(step_) / double(o_.total_steps)));
  ReplayBatch b = buffer_->sample(o_.batch_size, rng_, o_.device);
  Tensor target;
  {
    NoGradGuard no_grad;
    Tensor next_t = (*target_)(b.next_obs);
    Tensor next_q;
    if (o_.double_q) {
      Tensor best = argmax((*q_)(b.next_obs), 1, true);
      next_q = gather(next_t, 1, best).squeeze(1);
    } else {
      next_q = amax(next_t, {1});
    }
    target = b.rewards + b.discounts * (1.0 - b.dones) * next_q;
  }
  Tensor pred = gather((*q_)(b.obs), 1, b.actions.unsqueeze(1)).squeeze(1);
  Tensor loss = o_.prioritized ? mean(b.weights * smooth_l1_loss(pred, target, "none"))
                               : smooth_l1_loss(pred, target);
  Gradients g = loss.backward();
  if (o_.max_grad_norm > 0) optim::clip_grad_norm(g, q_->parameters(), o_.max_grad_norm);
  opt_->step(g);
  if (o_.prioritized) {
    std::vector<float> td = (pred.detach() - target).to_vector<float>();
    static_cast<PrioritizedReplayBuffer&>(*buffer_).update_priorities(b.indices, td);
  }
  ++updates_;
  metrics_.add("loss", loss.item<double>());
}

void DQN::evaluate_and_keep_best() {
  Evaluation e = evaluate(o_.eval_episodes, o_.seed * 1000003 + uint64_t(step_));
  metrics_.add("eval.return", e.mean);
  best_.offer(e.mean, *q_);
}

void DQN::learn(std::optional<int64_t> until) {
  const int64_t end = std::min(o_.total_steps, until.value_or(o_.total_steps));
  DeviceGuard on(o_.device);
  const auto explore = int64_t(o_.exploration_fraction * double(o_.total_steps));
  const LinearSchedule eps{o_.epsilon_start, o_.epsilon_end, std::max<int64_t>(explore, 1)};
  metrics_.start(o_.total_steps, step_);
  const double gamma = o_.gamma;
  while (step_ < end) {
    int64_t a;
    if (step_ < o_.learning_starts || rng_.uniform() < eps.at(step_)) a = rng_.integer(o_.net.actions);
    else a = act(loop_.obs);
    loop_.step(a, metrics_, [&](const StepResult& r) {
      if (nstep_) nstep_->add(0, loop_.obs, a, r.reward, r.obs, r.terminated, r.truncated, *buffer_);
      else buffer_->add(loop_.obs, a, r.reward, r.obs, r.terminated, gamma);
    });
    ++step_;
    if (step_ > o_.learning_starts && step_ % o_.train_freq == 0)
      for (int64_t k = 0; k < o_.gradient_steps; ++k) train_step();
    if (step_ % o_.target_update == 0) polyak_update(*target_, *q_, o_.tau);
    if (o_.eval_every > 0 && step_ % o_.eval_every == 0 && step_ > o_.learning_starts) evaluate_and_keep_best();
    metrics_.step(step_);
  }
  if (step_ >= o_.total_steps) {
    metrics_.finish();
    if (!best_.empty()) q_->load_state_dict(best_.params);
  }
}

void DQN::save(const std::string& path) const {
  Checkpoint c;
  c.put("q", *q_);
  c.put("target", *target_);
  c.put("optimizer", *opt_);
  c.put("buffer", buffer_->state_dict());
  if (nstep_) c.put("nstep", nstep_->state_dict());
  loop_.save(c);
  c.put_word("rng", rng_.state());
  c.put_scalar("step", double(step_));
  c.put_scalar("updates", double(updates_));
  best_.save(c);
  c.put(metrics_);
  c.save(path, kKind);
}

void DQN::load(const std::string& path) {
  Checkpoint c = Checkpoint::load(path, kKind);
  c.get("q", *q_);
  c.get("target", *target_);
  c.get("optimizer", *opt_);
  buffer_->load_state_dict(c.get_state("buffer"));
  if (nstep_) nstep_->load_state_dict(c.get_state("nstep"));
  loop_.load(c);
  rng_.set_state(c.get_word("rng"));
  step_ = int64_t(c.get_scalar("step"));
  updates_ = int64_t(c.get_scalar("updates"));
  best_.load(c, *q_);
  c.get(metrics_);
}

}  // namespace ember::rl

#include "ember/rl/wrappers.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "ember/error.h"

namespace ember::rl {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check_positive(const char* op, const char* what, int64_t v) {
  if (v < 1) detail::throw_value(op, std::string("expected ") + what + " >= 1, found " + std::to_string(v));
}

// A Box of the observation's size, unbounded (what normalisation can produce).
Space unbounded_like(const Space& s) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  Shape shape = s.kind() == Space::Kind::Box ? s.shape() : Shape{s.flat_size()};
  return Box(-inf, inf, shape);
}

void expect_count(const Env& w, std::span<const double> s, size_t n) {
  if (s.size() != n)
    detail::throw_value((w.name() + ".set_state").c_str(),
                        "expected " + std::to_string(n) + " values for this wrapper, found " +
                            std::to_string(s.size()));
}

void save_rms(const RunningMeanStd& r, std::vector<double>& out) {
  out.insert(out.end(), r.mean().begin(), r.mean().end());
  out.insert(out.end(), r.var().begin(), r.var().end());
  out.push_back(r.count());
}

void load_rms(RunningMeanStd& r, std::span<const double> s) {
  const auto n = size_t(r.size());
  r.set({s.begin(), s.begin() + int64_t(n)}, {s.begin() + int64_t(n), s.begin() + int64_t(2 * n)}, s[2 * n]);
}

}  // namespace

// --- TimeLimit ---
void TimeLimit::save_state(std::vector<double>& out) const { out.push_back(double(elapsed_)); }
void TimeLimit::load_state(std::span<const double> s) {
  expect_count(*this, s, 1);
  elapsed_ = int64_t(s[0]);
}
TimeLimit::TimeLimit(std::unique_ptr<Env> env, int64_t max_steps)
    : Wrapper(std::move(env)), max_steps_(max_steps) {
  check_positive("rl.TimeLimit", "max_steps", max_steps);
}

ResetResult TimeLimit::reset(std::optional<uint64_t> seed) {
  elapsed_ = 0;
  return env_->reset(seed);
}

StepResult TimeLimit::step(const Action& a) {
  StepResult r = env_->step(a);
  if (++elapsed_ >= max_steps_) r.truncated = true;
  return r;
}

// --- NormalizeObservation ---
NormalizeObservation::NormalizeObservation(std::unique_ptr<Env> env, NormalizeObservationOptions o)
    : Wrapper(std::move(env)), o_(o), space_(unbounded_like(env_->observation_space())),
      rms_(env_->observation_space().flat_size()),
      out_(size_t(env_->observation_space().flat_size())) {}

std::span<const float> NormalizeObservation::apply(std::span<const float> obs) {
  if (update_) rms_.update(obs);
  rms_.normalize(obs, out_, o_.epsilon);
  if (o_.clip > 0)
    for (float& v : out_) v = std::clamp(v, float(-o_.clip), float(o_.clip));
  return out_;
}

ResetResult NormalizeObservation::reset(std::optional<uint64_t> seed) {
  ResetResult r = env_->reset(seed);
  r.obs = apply(r.obs);
  return r;
}

StepResult NormalizeObservation::step(const Action& a) {
  StepResult r = env_->step(a);
  r.obs = apply(r.obs);
  return r;
}

void NormalizeObservation::save_state(std::vector<double>& out) const { save_rms(rms_, out); }
void NormalizeObservation::load_state(std::span<const double> s) {
  expect_count(*this, s, size_t(2 * rms_.size() + 1));
  load_rms(rms_, s);
}

// --- NormalizeReward ---
void NormalizeReward::save_state(std::vector<double>& out) const {
  save_rms(rms_, out);
  out.push_back(ret_);
}
void NormalizeReward::load_state(std::span<const double> s) {
  expect_count(*this, s, 4);
  load_rms(rms_, s);
  ret_ = s[3];
}
NormalizeReward::NormalizeReward(std::unique_ptr<Env> env, NormalizeRewardOptions o)
    : Wrapper(std::move(env)), o_(o), rms_(1) {
  if (!(o.gamma >= 0 && o.gamma <= 1))
    detail::throw_value("rl.NormalizeReward", "expected gamma in [0, 1], found " + std::to_string(o.gamma));
}

StepResult NormalizeReward::step(const Action& a) {
  StepResult r = env_->step(a);
  ret_ = ret_ * o_.gamma * (r.terminated ? 0.0 : 1.0) + r.reward;
  if (update_) rms_.update(std::span<const double>(&ret_, 1));
  r.reward = r.reward / std::sqrt(rms_.var()[0] + o_.epsilon);
  return r;
}

// --- FrameStack ---
FrameStack::FrameStack(std::unique_ptr<Env> env, int64_t k)
    : Wrapper(std::move(env)), k_(k), frame_(env_->observation_space().flat_size()),
      space_(Discrete(1)) {
  check_positive("rl.FrameStack", "k", k);
  const Space& s = env_->observation_space();
  std::vector<float> lo, hi;
  for (int64_t i = 0; i < k; ++i) {
    if (s.kind() == Space::Kind::Box) {
      lo.insert(lo.end(), s.low().begin(), s.low().end());
      hi.insert(hi.end(), s.high().begin(), s.high().end());
    } else {
      for (int64_t j = 0; j < frame_; ++j) {
        lo.push_back(0);
        hi.push_back(s.kind() == Space::Kind::Discrete ? float(s.start() + s.n() - 1)
                                                       : float(s.nvec()[size_t(j)] - 1));
      }
    }
  }
  space_ = Box(std::move(lo), std::move(hi), {k * frame_});
  frames_.resize(size_t(k * frame_));
}

ResetResult FrameStack::reset(std::optional<uint64_t> seed) {
  ResetResult r = env_->reset(seed);
  for (int64_t i = 0; i < k_; ++i) std::copy(r.obs.begin(), r.obs.end(), frames_.begin() + i * frame_);
  r.obs = frames_;
  return r;
}

StepResult FrameStack::step(const Action& a) {
  StepResult r = env_->step(a);
  std::copy(frames_.begin() + frame_, frames_.end(), frames_.begin());
  std::copy(r.obs.begin(), r.obs.end(), frames_.end() - frame_);
  r.obs = frames_;
  return r;
}

void FrameStack::save_state(std::vector<double>& out) const {
  out.insert(out.end(), frames_.begin(), frames_.end());
}
void FrameStack::load_state(std::span<const double> s) {
  expect_count(*this, s, frames_.size());
  std::copy(s.begin(), s.end(), frames_.begin());
}

// --- ActionRepeat ---
ActionRepeat::ActionRepeat(std::unique_ptr<Env> env, int64_t k) : Wrapper(std::move(env)), k_(k) {
  check_positive("rl.ActionRepeat", "k", k);
}

StepResult ActionRepeat::step(const Action& a) {
  StepResult r = env_->step(a);
  for (int64_t i = 1; i < k_ && !r.done(); ++i) {
    double total = r.reward;
    r = env_->step(a);
    r.reward += total;
  }
  return r;
}

// --- RecordEpisodeStatistics ---
RecordEpisodeStatistics::RecordEpisodeStatistics(std::unique_ptr<Env> env, int64_t window)
    : Wrapper(std::move(env)), window_(window) {
  check_positive("rl.RecordEpisodeStatistics", "window", window);
}

ResetResult RecordEpisodeStatistics::reset(std::optional<uint64_t> seed) {
  return_ = 0;
  length_ = 0;
  started_ = now_seconds();
  return env_->reset(seed);
}

StepResult RecordEpisodeStatistics::step(const Action& a) {
  StepResult r = env_->step(a);
  return_ += r.reward;
  ++length_;
  if (r.done()) {
    r.info.set("episode.return", return_);
    r.info.set("episode.length", double(length_));
    r.info.set("episode.seconds", now_seconds() - started_);
    returns_.push_back(return_);
    lengths_.push_back(length_);
    if (int64_t(returns_.size()) > window_) returns_.pop_front(), lengths_.pop_front();
    ++episodes_;
    return_ = 0;
    length_ = 0;
    started_ = now_seconds();
  }
  return r;
}

void RecordEpisodeStatistics::save_state(std::vector<double>& out) const {
  out.push_back(return_);
  out.push_back(double(length_));
  out.push_back(double(episodes_));
}
void RecordEpisodeStatistics::load_state(std::span<const double> s) {
  expect_count(*this, s, 3);
  return_ = s[0], length_ = int64_t(s[1]), episodes_ = int64_t(s[2]);
}

double RecordEpisodeStatistics::mean_return() const {
  if (returns_.empty()) return 0;
  return std::accumulate(returns_.begin(), returns_.end(), 0.0) / double(returns_.size());
}

// --- CheckSpaces ---
ResetResult CheckSpaces::reset(std::optional<uint64_t> seed) {
  ResetResult r = env_->reset(seed);
  env_->observation_space().check(r.obs, (env_->name() + ".reset").c_str());
  return r;
}

StepResult CheckSpaces::step(const Action& a) {
  env_->action_space().check(a, (env_->name() + ".step").c_str());
  StepResult r = env_->step(a);
  env_->observation_space().check(r.obs, (env_->name() + ".step").c_str());
  if (!std::isfinite(r.reward))
    detail::throw_value((env_->name() + ".step").c_str(),
                        "expected a finite reward, found " + std::to_string(r.reward));
  return r;
}

}  // namespace ember::rl

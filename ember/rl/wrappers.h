#pragma once
// Wrappers (Gymnasium's): time limit, observation and reward normalisation with running
// statistics, frame stacking, action repeat, episode statistics, and a space checker.
#include <deque>

#include "ember/rl/env.h"
#include "ember/rl/normalize.h"

namespace ember::rl {

/// Truncates an episode after `max_steps` steps.
class TimeLimit : public Wrapper {
 public:
  TimeLimit(std::unique_ptr<Env> env, int64_t max_steps);
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "TimeLimit<" + env_->name() + ">"; }
  int64_t max_steps() const { return max_steps_; }
  int64_t elapsed() const { return elapsed_; }

 protected:
  void save_state(std::vector<double>& out) const override;
  void load_state(std::span<const double> s) override;

 private:
  int64_t max_steps_, elapsed_ = 0;
};

struct NormalizeObservationOptions {
  double epsilon = 1e-8;
  /// Clip normalised values to [-clip, clip] (0: no clipping).
  double clip = 0;
};

/// Observations become (obs - mean) / sqrt(var + epsilon) under running statistics updated with
/// every observation while update() is on (turn it off for evaluation).
class NormalizeObservation : public Wrapper {
 public:
  explicit NormalizeObservation(std::unique_ptr<Env> env, NormalizeObservationOptions o = {});
  const Space& observation_space() const override { return space_; }
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "NormalizeObservation<" + env_->name() + ">"; }
  RunningMeanStd& stats() { return rms_; }
  void set_update(bool on) { update_ = on; }
  bool update() const { return update_; }

 protected:
  void save_state(std::vector<double>& out) const override;
  void load_state(std::span<const double> s) override;

 private:
  std::span<const float> apply(std::span<const float> obs);
  NormalizeObservationOptions o_;
  Space space_;
  RunningMeanStd rms_;
  std::vector<float> out_;
  bool update_ = true;
};

struct NormalizeRewardOptions {
  double gamma = 0.99;
  double epsilon = 1e-8;
};

/// Rewards are divided by the running std of the discounted return (Gymnasium's NormalizeReward).
class NormalizeReward : public Wrapper {
 public:
  explicit NormalizeReward(std::unique_ptr<Env> env, NormalizeRewardOptions o = {});
  StepResult step(const Action& a) override;
  std::string name() const override { return "NormalizeReward<" + env_->name() + ">"; }
  RunningMeanStd& stats() { return rms_; }
  void set_update(bool on) { update_ = on; }

 protected:
  void save_state(std::vector<double>& out) const override;
  void load_state(std::span<const double> s) override;

 private:
  NormalizeRewardOptions o_;
  RunningMeanStd rms_;
  double ret_ = 0;
  bool update_ = true;
};

/// The observation is the last `k` observations, oldest first (a reset repeats the first one).
class FrameStack : public Wrapper {
 public:
  FrameStack(std::unique_ptr<Env> env, int64_t k);
  const Space& observation_space() const override { return space_; }
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "FrameStack<" + env_->name() + ">"; }

 protected:
  void save_state(std::vector<double>& out) const override;
  void load_state(std::span<const double> s) override;

 private:
  int64_t k_, frame_;
  Space space_;
  std::vector<float> frames_;
};

/// Each action is applied `k` times (stopping early at the episode's end); rewards add up.
class ActionRepeat : public Wrapper {
 public:
  ActionRepeat(std::unique_ptr<Env> env, int64_t k);
  StepResult step(const Action& a) override;
  std::string name() const override { return "ActionRepeat<" + env_->name() + ">"; }

 private:
  int64_t k_;
};

/// Keeps each episode's return, length and wall time; at an episode's end the step's info gets
/// "episode.return", "episode.length" and "episode.seconds".
class RecordEpisodeStatistics : public Wrapper {
 public:
  explicit RecordEpisodeStatistics(std::unique_ptr<Env> env, int64_t window = 100);
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "RecordEpisodeStatistics<" + env_->name() + ">"; }
  /// The last `window` episodes' returns and lengths, oldest first.
  const std::deque<double>& returns() const { return returns_; }
  const std::deque<int64_t>& lengths() const { return lengths_; }
  /// Mean of returns() (0 before the first episode ends).
  double mean_return() const;
  int64_t episodes() const { return episodes_; }

 protected:
  void save_state(std::vector<double>& out) const override;
  void load_state(std::span<const double> s) override;

 private:
  int64_t window_, episodes_ = 0, length_ = 0;
  double return_ = 0;
  double started_ = 0;
  std::deque<double> returns_;
  std::deque<int64_t> lengths_;
};

/// Checks every observation against the observation space and every action against the action
/// space (ValueError naming the wrapped environment): Gymnasium's env checker, for new envs.
class CheckSpaces : public Wrapper {
 public:
  explicit CheckSpaces(std::unique_ptr<Env> env) : Wrapper(std::move(env)) {}
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "CheckSpaces<" + env_->name() + ">"; }
};

}  // namespace ember::rl

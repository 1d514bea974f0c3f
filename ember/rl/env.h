#pragma once
// The environment interface (Gymnasium's): reset(seed) gives an observation and info; step(action)
// gives an observation, a reward, whether the episode terminated (a terminal state) or was
// truncated (a time limit), and info. Observations are flat float32 vectors owned by the
// environment: the span a call returns stays valid until the next reset or step.
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ember/rl/space.h"

namespace ember::rl {

/// Named numbers beside an observation ("episode.return", ...). Empty costs nothing.
class Info {
 public:
  void set(const std::string& key, double v);
  bool has(const std::string& key) const;
  /// The value of `key`, or `fallback` when absent.
  double get(const std::string& key, double fallback = 0) const;
  bool empty() const { return items_.empty(); }
  const std::vector<std::pair<std::string, double>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, double>> items_;
};

struct ResetResult {
  std::span<const float> obs;
  Info info;
};

struct StepResult {
  std::span<const float> obs;
  double reward = 0;
  bool terminated = false;  // the episode reached a terminal state (no bootstrapping)
  bool truncated = false;   // cut short (a time limit): the next state's value still counts
  Info info;
  bool done() const { return terminated || truncated; }
};

/// Base of every environment and wrapper.
class Env {
 public:
  virtual ~Env() = default;
  virtual const Space& observation_space() const = 0;
  virtual const Space& action_space() const = 0;
  /// Starts an episode. A seed restarts the environment's generator; without one it continues.
  virtual ResetResult reset(std::optional<uint64_t> seed = {}) = 0;
  /// Advances one step; an action outside action_space() throws ValueError naming the env.
  virtual StepResult step(const Action& action) = 0;
  /// "CartPole-v1", or the wrapper chain "TimeLimit<CartPole-v1>".
  virtual std::string name() const = 0;
  /// Everything a step depends on besides the generator: the environment's physical state,
  /// then each wrapper's counters and statistics (for tests and checkpoints); empty if none.
  virtual std::vector<double> state() const { return {}; }
  /// Sets what state() returned (the observation follows it); the generator is kept.
  virtual void set_state(std::span<const double> s);
  /// The generator's state (wrappers forward to the environment they wrap).
  virtual uint64_t rng_state() const { return 0; }
  virtual void set_rng_state(uint64_t) {}
};

/// An environment's common parts: its spaces, generator and observation buffer.
class EnvBase : public Env {
 public:
  const Space& observation_space() const override { return obs_space_; }
  const Space& action_space() const override { return act_space_; }
  uint64_t rng_state() const override { return rng_.state(); }
  void set_rng_state(uint64_t s) override { rng_.set_state(s); }

 protected:
  EnvBase(Space obs, Space act);
  /// Restarts the generator when `seed` is given (a first reset without one draws a seed).
  void seed_rng(std::optional<uint64_t> seed);
  Space obs_space_, act_space_;
  Rng rng_;
  bool seeded_ = false;
  std::vector<float> obs_;
};

/// Wraps an environment and forwards what it does not change.
class Wrapper : public Env {
 public:
  explicit Wrapper(std::unique_ptr<Env> env);
  const Space& observation_space() const override { return env_->observation_space(); }
  const Space& action_space() const override { return env_->action_space(); }
  ResetResult reset(std::optional<uint64_t> seed = {}) override { return env_->reset(seed); }
  StepResult step(const Action& a) override { return env_->step(a); }
  /// The wrapped environment's state followed by this wrapper's own (save_state()).
  std::vector<double> state() const override;
  void set_state(std::span<const double> s) override;
  uint64_t rng_state() const override { return env_->rng_state(); }
  void set_rng_state(uint64_t s) override { env_->set_rng_state(s); }
  Env& inner() { return *env_; }
  const Env& inner() const { return *env_; }

 protected:
  /// This wrapper's counters and statistics, appended to the wrapped environment's state.
  virtual void save_state(std::vector<double>& out) const {}
  /// Restores what save_state() appended (exactly those values; check their count).
  virtual void load_state(std::span<const double> s);
  std::unique_ptr<Env> env_;
};

/// Makes a registered environment with its Gymnasium time limit: "CartPole-v1" (500 steps),
/// "Acrobot-v1" (500), "MountainCar-v0" (200), "MountainCarContinuous-v0" (999),
/// "Pendulum-v1" (200), "GridWorld-v0" (the default 5x5 grid, 100). Unknown names throw ValueError
/// listing the known ones.
std::unique_ptr<Env> make(const std::string& name);
/// The names make() knows.
std::vector<std::string> registered_envs();
/// Adds `name` to make(): `factory()` builds the bare environment, wrapped in a TimeLimit of
/// `max_steps` (0: none). A name already registered throws ValueError.
void register_env(const std::string& name, std::function<std::unique_ptr<Env>()> factory,
                  int64_t max_steps = 0);

}  // namespace ember::rl

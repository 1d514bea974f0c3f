#pragma once
// The classic-control environments with Gymnasium's dynamics (gymnasium/envs/classic_control,
// written from the published equations), and a configurable grid world. Each is the bare
// environment: rl::make("CartPole-v1") adds the time limit Gymnasium registers it with.
// Dynamics run in double; observations are rounded to float32 as Gymnasium's are.
#include <string>
#include <utility>
#include <vector>

#include "ember/rl/env.h"

namespace ember::rl {

/// Balance a pole on a cart (Barto, Sutton and Anderson 1983). Actions: 0 push left, 1 push right.
/// Observation: cart position, velocity, pole angle, angular velocity. +1 per step, terminal when
/// |x| > 2.4 or |angle| > 12 degrees.
class CartPole : public EnvBase {
 public:
  CartPole();
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "CartPole-v1"; }
  /// x, x_dot, theta, theta_dot and whether a terminal state was passed (set_state takes the
  /// first four alone too).
  std::vector<double> state() const override { return {s_[0], s_[1], s_[2], s_[3], beyond_ ? 1.0 : 0.0}; }
  void set_state(std::span<const double> s) override;

 private:
  void observe();
  double s_[4] = {};
  bool beyond_ = false;  // stepped past a terminal state (Gymnasium warns; reward 0)
};

/// Swing a two-link pendulum's tip above a line (Sutton 1996; the "book" dynamics, RK4 over
/// dt = 0.2). Actions: torque -1, 0, +1. Observation: cos/sin of both angles and both angular
/// velocities. -1 per step until terminal.
class Acrobot : public EnvBase {
 public:
  Acrobot();
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "Acrobot-v1"; }
  std::vector<double> state() const override { return {s_, s_ + 4}; }
  void set_state(std::span<const double> s) override;

 private:
  void observe();
  double s_[4] = {};
};

/// Drive an under-powered car up a hill (Moore 1990). Actions: 0 left, 1 none, 2 right.
/// Observation: position, velocity. -1 per step, terminal at position >= 0.5.
class MountainCar : public EnvBase {
 public:
  MountainCar();
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "MountainCar-v0"; }
  std::vector<double> state() const override { return {s_, s_ + 2}; }
  void set_state(std::span<const double> s) override;

 private:
  double s_[2] = {};
};

/// MountainCar with a continuous force in [-1, 1]: reward 100 at the goal (position >= 0.45)
/// minus 0.1 * force^2 per step. Its state is float32, as Gymnasium's is.
class MountainCarContinuous : public EnvBase {
 public:
  MountainCarContinuous();
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "MountainCarContinuous-v0"; }
  std::vector<double> state() const override { return {s_[0], s_[1]}; }
  void set_state(std::span<const double> s) override;

 private:
  float s_[2] = {};
};

/// Swing a pendulum up and hold it (torque in [-2, 2], g = 10). Observation: cos, sin of the
/// angle and the angular velocity. Reward -(angle^2 + 0.1 * velocity^2 + 0.001 * torque^2);
/// never terminal.
class Pendulum : public EnvBase {
 public:
  explicit Pendulum(double g = 10.0);
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "Pendulum-v1"; }
  std::vector<double> state() const override { return {s_, s_ + 2}; }
  void set_state(std::span<const double> s) override;

 private:
  void observe();
  double g_;
  double s_[2] = {};
};

/// A rectangular grid: start, goal cells, walls, pits, a reward per step and a chance to slip.
struct GridWorldOptions {
  int64_t width = 5, height = 5;
  std::pair<int64_t, int64_t> start = {0, 0};  // (row, column)
  std::vector<std::pair<int64_t, int64_t>> goals = {{4, 4}};
  std::vector<std::pair<int64_t, int64_t>> walls = {};
  std::vector<std::pair<int64_t, int64_t>> pits = {};  // terminal with pit_reward
  double step_reward = -0.01, goal_reward = 1.0, pit_reward = -1.0;
  /// Probability that a move goes to a random perpendicular direction instead.
  double slip = 0.0;
  /// Observation: the cell's index (Discrete(width * height)), or a one-hot vector.
  bool one_hot = false;
};

/// Actions: 0 up, 1 right, 2 down, 3 left; a move into a wall or off the grid stays put.
class GridWorld : public EnvBase {
 public:
  explicit GridWorld(GridWorldOptions o = {});
  ResetResult reset(std::optional<uint64_t> seed = {}) override;
  StepResult step(const Action& a) override;
  std::string name() const override { return "GridWorld"; }
  std::vector<double> state() const override { return {double(row_), double(col_)}; }
  void set_state(std::span<const double> s) override;
  const GridWorldOptions& options() const { return o_; }

 private:
  enum Cell : uint8_t { Free, Wall, Goal, Pit };
  Cell at(int64_t r, int64_t c) const { return cells_[size_t(r * o_.width + c)]; }
  void observe();
  GridWorldOptions o_;
  std::vector<Cell> cells_;
  int64_t row_ = 0, col_ = 0;
};

}  // namespace ember::rl

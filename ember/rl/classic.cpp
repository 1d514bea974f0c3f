// CartPole, Acrobot, MountainCar, MountainCarContinuous and Pendulum: Gymnasium's classic-control
// dynamics, operation for operation (tests/gen/gen_rl_traces.py computes the same in Python and
// tests/rl/envs_test.cpp compares the two step by step).
#include <cmath>
#include <limits>
#include <numbers>

#include "ember/error.h"
#include "ember/rl/envs.h"

namespace ember::rl {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr float kFloatMax = std::numeric_limits<float>::max();

void check_state(const Env& env, std::span<const double> s, size_t n) {
  if (s.size() != n)
    detail::throw_value((env.name() + ".set_state").c_str(),
                        "expected " + std::to_string(n) + " values, found " +
                            std::to_string(s.size()));
}

// --- CartPole ---
constexpr double kGravity = 9.8, kMassCart = 1.0, kMassPole = 0.1;
constexpr double kTotalMass = kMassPole + kMassCart, kLength = 0.5;
constexpr double kPoleMassLength = kMassPole * kLength, kForceMag = 10.0, kTau = 0.02;
constexpr double kThetaThreshold = 12 * 2 * kPi / 360, kXThreshold = 2.4;

}  // namespace

CartPole::CartPole()
    : EnvBase(Box({-float(kXThreshold * 2), -kFloatMax, -float(kThetaThreshold * 2), -kFloatMax},
                  {float(kXThreshold * 2), kFloatMax, float(kThetaThreshold * 2), kFloatMax}),
              Discrete(2)) {}

void CartPole::observe() {
  for (int i = 0; i < 4; ++i) obs_[size_t(i)] = float(s_[i]);
}

ResetResult CartPole::reset(std::optional<uint64_t> seed) {
  seed_rng(seed);
  for (double& v : s_) v = rng_.uniform(-0.05, 0.05);
  beyond_ = false;
  observe();
  return {obs_, {}};
}

void CartPole::set_state(std::span<const double> s) {
  if (s.size() != 4) check_state(*this, s, 5);
  for (int i = 0; i < 4; ++i) s_[i] = s[size_t(i)];
  beyond_ = s.size() == 5 && s[4] != 0;
  observe();
}

StepResult CartPole::step(const Action& a) {
  if (a.kind() != Action::Kind::Index || uint64_t(a.index()) > 1) act_space_.check(a, "CartPole-v1.step");
  double x = s_[0], x_dot = s_[1], theta = s_[2], theta_dot = s_[3];
  const double force = a.index() == 1 ? kForceMag : -kForceMag;
  const double costheta = std::cos(theta), sintheta = std::sin(theta);
  const double temp = (force + kPoleMassLength * (theta_dot * theta_dot) * sintheta) / kTotalMass;
  const double thetaacc = (kGravity * sintheta - costheta * temp) /
                          (kLength * (4.0 / 3.0 - kMassPole * (costheta * costheta) / kTotalMass));
  const double xacc = temp - kPoleMassLength * thetaacc * costheta / kTotalMass;
  x = x + kTau * x_dot;
  x_dot = x_dot + kTau * xacc;
  theta = theta + kTau * theta_dot;
  theta_dot = theta_dot + kTau * thetaacc;
  s_[0] = x, s_[1] = x_dot, s_[2] = theta, s_[3] = theta_dot;
  const bool terminated = x < -kXThreshold || x > kXThreshold || theta < -kThetaThreshold ||
                          theta > kThetaThreshold;
  double reward = 1.0;
  if (terminated) {
    if (beyond_) reward = 0.0;
    beyond_ = true;
  }
  observe();
  return {obs_, reward, terminated, false, {}};
}

// --- Acrobot ---
namespace {
constexpr double kDt = 0.2, kL1 = 1.0, kM1 = 1.0, kM2 = 1.0, kLc1 = 0.5, kLc2 = 0.5, kMoi = 1.0;
constexpr double kMaxVel1 = 4 * kPi, kMaxVel2 = 9 * kPi;

// d/dt (theta1, theta2, dtheta1, dtheta2) under torque a ("book" dynamics).
void dsdt(const double* s, double a, double* out) {
  const double m1 = kM1, m2 = kM2, l1 = kL1, lc1 = kLc1, lc2 = kLc2, I1 = kMoi, I2 = kMoi, g = 9.8;
  const double theta1 = s[0], theta2 = s[1], dtheta1 = s[2], dtheta2 = s[3];
  const double d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2 * l1 * lc2 * std::cos(theta2)) + I1 + I2;
  const double d2 = m2 * (lc2 * lc2 + l1 * lc2 * std::cos(theta2)) + I2;
  const double phi2 = m2 * lc2 * g * std::cos(theta1 + theta2 - kPi / 2.0);
  const double phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * std::sin(theta2) -
                      2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * std::sin(theta2) +
                      (m1 * lc1 + m2 * l1) * g * std::cos(theta1 - kPi / 2) + phi2;
  const double ddtheta2 =
      (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * std::sin(theta2) - phi2) /
      (m2 * (lc2 * lc2) + I2 - (d2 * d2) / d1);
  const double ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
  out[0] = dtheta1, out[1] = dtheta2, out[2] = ddtheta1, out[3] = ddtheta2;
}

double wrap(double x, double m, double M) {
  const double diff = M - m;
  while (x > M) x = x - diff;
  while (x < m) x = x + diff;
  return x;
}
double bound(double x, double m, double M) { return std::min(std::max(x, m), M); }
}  // namespace

Acrobot::Acrobot()
    : EnvBase(Box({-1, -1, -1, -1, -float(kMaxVel1), -float(kMaxVel2)},
                  {1, 1, 1, 1, float(kMaxVel1), float(kMaxVel2)}),
              Discrete(3)) {}

void Acrobot::observe() {
  obs_[0] = float(std::cos(s_[0]));
  obs_[1] = float(std::sin(s_[0]));
  obs_[2] = float(std::cos(s_[1]));
  obs_[3] = float(std::sin(s_[1]));
  obs_[4] = float(s_[2]);
  obs_[5] = float(s_[3]);
}

ResetResult Acrobot::reset(std::optional<uint64_t> seed) {
  seed_rng(seed);
  for (double& v : s_) v = double(float(rng_.uniform(-0.1, 0.1)));  // Gymnasium's astype(float32)
  observe();
  return {obs_, {}};
}

void Acrobot::set_state(std::span<const double> s) {
  check_state(*this, s, 4);
  for (int i = 0; i < 4; ++i) s_[i] = s[size_t(i)];
  observe();
}

StepResult Acrobot::step(const Action& a) {
  act_space_.check(a, "Acrobot-v1.step");
  const double torque = double(a.index() - 1);
  // One RK4 step over [0, dt] (Gymnasium's rk4 with t = [0, dt]).
  const double dt = kDt, dt2 = dt / 2.0;
  double k1[4], k2[4], k3[4], k4[4], y[4];
  dsdt(s_, torque, k1);
  for (int i = 0; i < 4; ++i) y[i] = s_[i] + dt2 * k1[i];
  dsdt(y, torque, k2);
  for (int i = 0; i < 4; ++i) y[i] = s_[i] + dt2 * k2[i];
  dsdt(y, torque, k3);
  for (int i = 0; i < 4; ++i) y[i] = s_[i] + dt * k3[i];
  dsdt(y, torque, k4);
  double ns[4];
  for (int i = 0; i < 4; ++i) ns[i] = s_[i] + dt / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
  s_[0] = wrap(ns[0], -kPi, kPi);
  s_[1] = wrap(ns[1], -kPi, kPi);
  s_[2] = bound(ns[2], -kMaxVel1, kMaxVel1);
  s_[3] = bound(ns[3], -kMaxVel2, kMaxVel2);
  const bool terminated = -std::cos(s_[0]) - std::cos(s_[1] + s_[0]) > 1.0;
  observe();
  return {obs_, terminated ? 0.0 : -1.0, terminated, false, {}};
}

// --- MountainCar ---
namespace {
constexpr double kMinPos = -1.2, kMaxPos = 0.6, kMaxSpeed = 0.07;
}

MountainCar::MountainCar()
    : EnvBase(Box({float(kMinPos), -float(kMaxSpeed)}, {float(kMaxPos), float(kMaxSpeed)}),
              Discrete(3)) {}

ResetResult MountainCar::reset(std::optional<uint64_t> seed) {
  seed_rng(seed);
  s_[0] = rng_.uniform(-0.6, -0.4);
  s_[1] = 0;
  obs_[0] = float(s_[0]), obs_[1] = float(s_[1]);
  return {obs_, {}};
}

void MountainCar::set_state(std::span<const double> s) {
  check_state(*this, s, 2);
  s_[0] = s[0], s_[1] = s[1];
  obs_[0] = float(s_[0]), obs_[1] = float(s_[1]);
}

StepResult MountainCar::step(const Action& a) {
  act_space_.check(a, "MountainCar-v0.step");
  double position = s_[0], velocity = s_[1];
  velocity += double(a.index() - 1) * 0.001 + std::cos(3 * position) * (-0.0025);
  velocity = std::clamp(velocity, -kMaxSpeed, kMaxSpeed);
  position += velocity;
  position = std::clamp(position, kMinPos, kMaxPos);
  if (position == kMinPos && velocity < 0) velocity = 0;
  const bool terminated = position >= 0.5 && velocity >= 0;
  s_[0] = position, s_[1] = velocity;
  obs_[0] = float(position), obs_[1] = float(velocity);
  return {obs_, -1.0, terminated, false, {}};
}

// --- MountainCarContinuous ---
MountainCarContinuous::MountainCarContinuous()
    : EnvBase(Box({float(kMinPos), -float(kMaxSpeed)}, {float(kMaxPos), float(kMaxSpeed)}),
              Box({-1.f}, {1.f})) {}

ResetResult MountainCarContinuous::reset(std::optional<uint64_t> seed) {
  seed_rng(seed);
  s_[0] = float(rng_.uniform(-0.6, -0.4));
  s_[1] = 0;
  obs_[0] = s_[0], obs_[1] = s_[1];
  return {obs_, {}};
}

void MountainCarContinuous::set_state(std::span<const double> s) {
  check_state(*this, s, 2);
  s_[0] = float(s[0]), s_[1] = float(s[1]);
  obs_[0] = s_[0], obs_[1] = s_[1];
}

StepResult MountainCarContinuous::step(const Action& a) {
  act_space_.check(a, "MountainCarContinuous-v0.step");
  double position = s_[0], velocity = s_[1];
  const double u = a.values()[0];
  const double force = std::min(std::max(u, -1.0), 1.0);
  velocity += force * 0.0015 - 0.0025 * std::cos(3 * position);
  if (velocity > kMaxSpeed) velocity = kMaxSpeed;
  if (velocity < -kMaxSpeed) velocity = -kMaxSpeed;
  position += velocity;
  if (position > kMaxPos) position = kMaxPos;
  if (position < kMinPos) position = kMinPos;
  if (position == kMinPos && velocity < 0) velocity = 0;
  const bool terminated = position >= 0.45 && velocity >= 0;
  double reward = terminated ? 100.0 : 0.0;
  reward -= u * u * 0.1;
  s_[0] = float(position), s_[1] = float(velocity);
  obs_[0] = s_[0], obs_[1] = s_[1];
  return {obs_, reward, terminated, false, {}};
}

// --- Pendulum ---
namespace {
constexpr double kPendMaxSpeed = 8, kMaxTorque = 2.0, kPendDt = 0.05;
double angle_normalize(double x) {  // Python's ((x + pi) % (2 pi)) - pi
  double r = std::fmod(x + kPi, 2 * kPi);
  if (r != 0 && r < 0) r += 2 * kPi;
  return r - kPi;
}
}  // namespace

Pendulum::Pendulum(double g)
    : EnvBase(Box({-1, -1, -float(kPendMaxSpeed)}, {1, 1, float(kPendMaxSpeed)}),
              Box({-float(kMaxTorque)}, {float(kMaxTorque)})),
      g_(g) {}

void Pendulum::observe() {
  obs_[0] = float(std::cos(s_[0]));
  obs_[1] = float(std::sin(s_[0]));
  obs_[2] = float(s_[1]);
}

ResetResult Pendulum::reset(std::optional<uint64_t> seed) {
  seed_rng(seed);
  s_[0] = rng_.uniform(-kPi, kPi);
  s_[1] = rng_.uniform(-1.0, 1.0);
  observe();
  return {obs_, {}};
}

void Pendulum::set_state(std::span<const double> s) {
  check_state(*this, s, 2);
  s_[0] = s[0], s_[1] = s[1];
  observe();
}

StepResult Pendulum::step(const Action& a) {
  act_space_.check(a, "Pendulum-v1.step");
  const double th = s_[0], thdot = s_[1], g = g_, m = 1.0, l = 1.0, dt = kPendDt;
  const double u = std::clamp(double(a.values()[0]), -kMaxTorque, kMaxTorque);
  const double an = angle_normalize(th);
  const double costs = an * an + 0.1 * (thdot * thdot) + 0.001 * (u * u);
  double newthdot = thdot + (3 * g / (2 * l) * std::sin(th) + 3.0 / (m * (l * l)) * u) * dt;
  newthdot = std::clamp(newthdot, -kPendMaxSpeed, kPendMaxSpeed);
  const double newth = th + newthdot * dt;
  s_[0] = newth, s_[1] = newthdot;
  observe();
  return {obs_, -costs, false, false, {}};
}

}  // namespace ember::rl

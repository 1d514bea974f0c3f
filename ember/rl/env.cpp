#include "ember/rl/env.h"

#include <mutex>
#include <random>

#include "ember/error.h"
#include "ember/rl/envs.h"
#include "ember/rl/wrappers.h"

namespace ember::rl {

void Info::set(const std::string& key, double v) {
  for (auto& [k, x] : items_)
    if (k == key) {
      x = v;
      return;
    }
  items_.emplace_back(key, v);
}

bool Info::has(const std::string& key) const {
  for (const auto& [k, x] : items_)
    if (k == key) return true;
  return false;
}

double Info::get(const std::string& key, double fallback) const {
  for (const auto& [k, x] : items_)
    if (k == key) return x;
  return fallback;
}

void Env::set_state(std::span<const double>) {
  detail::throw_not_implemented(name().c_str(), "this environment has no settable state");
}

EnvBase::EnvBase(Space obs, Space act)
    : obs_space_(std::move(obs)), act_space_(std::move(act)),
      obs_(size_t(obs_space_.flat_size())) {}

void EnvBase::seed_rng(std::optional<uint64_t> seed) {
  if (seed) {
    rng_ = Rng(*seed);
    seeded_ = true;
  } else if (!seeded_) {
    rng_ = Rng((uint64_t(std::random_device{}()) << 32) | std::random_device{}());
    seeded_ = true;
  }
}

Wrapper::Wrapper(std::unique_ptr<Env> env) : env_(std::move(env)) {
  if (!env_) detail::throw_value("rl.Wrapper", "expected an environment, found none");
}

std::vector<double> Wrapper::state() const {
  std::vector<double> s = env_->state();
  save_state(s);
  return s;
}

void Wrapper::set_state(std::span<const double> s) {
  const size_t inner = env_->state().size();
  if (s.size() < inner)
    detail::throw_value((name() + ".set_state").c_str(),
                        "expected at least " + std::to_string(inner) + " values, found " +
                            std::to_string(s.size()));
  load_state(s.subspan(inner));
  env_->set_state(s.first(inner));
}

void Wrapper::load_state(std::span<const double> s) {
  if (!s.empty())
    detail::throw_value((name() + ".set_state").c_str(),
                        "expected no values for this wrapper, found " + std::to_string(s.size()));
}

namespace {
struct Registered {
  const char* name;
  std::unique_ptr<Env> (*make)();
  int64_t max_steps;
};
const Registered kEnvs[] = {
    {"CartPole-v1", []() -> std::unique_ptr<Env> { return std::make_unique<CartPole>(); }, 500},
    {"Acrobot-v1", []() -> std::unique_ptr<Env> { return std::make_unique<Acrobot>(); }, 500},
    {"MountainCar-v0", []() -> std::unique_ptr<Env> { return std::make_unique<MountainCar>(); }, 200},
    {"MountainCarContinuous-v0",
     []() -> std::unique_ptr<Env> { return std::make_unique<MountainCarContinuous>(); }, 999},
    {"Pendulum-v1", []() -> std::unique_ptr<Env> { return std::make_unique<Pendulum>(); }, 200},
    {"GridWorld-v0", []() -> std::unique_ptr<Env> { return std::make_unique<GridWorld>(); }, 100},
};
struct UserEnv {
  std::string name;
  std::function<std::unique_ptr<Env>()> make;
  int64_t max_steps;
};
std::mutex& user_mutex() {
  static std::mutex m;
  return m;
}
std::vector<UserEnv>& user_envs() {
  static std::vector<UserEnv> v;
  return v;
}
}  // namespace

std::unique_ptr<Env> make(const std::string& name) {
  for (const auto& r : kEnvs)
    if (name == r.name) return std::make_unique<TimeLimit>(r.make(), r.max_steps);
  std::function<std::unique_ptr<Env>()> factory;
  int64_t max_steps = 0;
  {
    std::lock_guard<std::mutex> lock(user_mutex());
    for (const auto& u : user_envs())
      if (u.name == name) factory = u.make, max_steps = u.max_steps;
  }
  if (factory) {
    auto env = factory();
    if (!env) detail::throw_value("rl.make", "the factory registered for '" + name + "' returned no environment");
    if (max_steps > 0) return std::make_unique<TimeLimit>(std::move(env), max_steps);
    return env;
  }
  std::string known;
  for (const auto& n : registered_envs()) known += (known.empty() ? "" : ", ") + n;
  detail::throw_value("rl.make", "expected one of " + known + ", found '" + name + "'");
}

std::vector<std::string> registered_envs() {
  std::vector<std::string> out;
  for (const auto& r : kEnvs) out.emplace_back(r.name);
  std::lock_guard<std::mutex> lock(user_mutex());
  for (const auto& u : user_envs()) out.push_back(u.name);
  return out;
}

void register_env(const std::string& name, std::function<std::unique_ptr<Env>()> factory, int64_t max_steps) {
  if (!factory || max_steps < 0)
    detail::throw_value("rl.register_env", "expected a factory and max_steps >= 0 for '" + name + "'");
  for (const auto& n : registered_envs())
    if (n == name) detail::throw_value("rl.register_env", "'" + name + "' is already registered");
  std::lock_guard<std::mutex> lock(user_mutex());
  user_envs().push_back({name, std::move(factory), max_steps});
}

}  // namespace ember::rl

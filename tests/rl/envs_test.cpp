// The environments step for step against tests/gen/gen_rl_traces.py (Gymnasium's equations in
// Python): reset(seed), then each action's observation, reward and terminal flag, through
// episode ends and unseeded resets.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/rl/envs.h"
#include "ember/rl/wrappers.h"

using namespace ember;
using namespace ember::rl;
using json = nlohmann::json;

namespace {

const json& traces() {
  static const json j = [] {
    std::ifstream f(std::string(EMBER_TEST_DATA) + "/rl/traces.json");
    EXPECT_TRUE(f.good()) << "missing tests/data/rl/traces.json (run tests/gen/gen_rl_traces.py)";
    return json::parse(f);
  }();
  return j;
}

std::unique_ptr<Env> bare(const std::string& name) {
  if (name == "CartPole-v1") return std::make_unique<CartPole>();
  if (name == "Acrobot-v1") return std::make_unique<Acrobot>();
  if (name == "MountainCar-v0") return std::make_unique<MountainCar>();
  if (name == "MountainCarContinuous-v0") return std::make_unique<MountainCarContinuous>();
  if (name == "Pendulum-v1") return std::make_unique<Pendulum>();
  return std::make_unique<GridWorld>(GridWorldOptions{.width = 4, .height = 3, .start = {0, 0},
                                                      .goals = {{2, 3}}, .walls = {{1, 1}},
                                                      .pits = {{1, 3}}, .slip = 0.2});
}

void expect_obs(std::span<const float> got, const json& want, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < got.size(); ++i)
    // Same operations in the same order on the same libm: equal, bit for bit.
    ASSERT_EQ(got[i], want[i].get<float>()) << where << " element " << i;
}

class EnvTrace : public ::testing::TestWithParam<std::string> {};

TEST_P(EnvTrace, MatchesReferenceStepForStep) {
  const std::string name = GetParam();
  const json& ev = traces().at("traces").at(name);
  const uint64_t seed = name == "CartPole-v1" ? 42 : name == "Acrobot-v1" ? 7 : name == "MountainCar-v0" ? 3
                        : name == "MountainCarContinuous-v0" ? 11 : name == "Pendulum-v1" ? 5 : 13;
  auto env = bare(name);
  bool first = true;
  int steps = 0;
  for (size_t k = 0; k < ev.size(); ++k) {
    const json& e = ev[k];
    const std::string where = name + " event " + std::to_string(k);
    if (e.contains("reset")) {
      auto r = first ? env->reset(seed) : env->reset();
      first = false;
      expect_obs(r.obs, e["reset"], where);
      env->observation_space().check(r.obs, "test");
      continue;
    }
    StepResult r = [&] {
      if (e["action"].is_array()) return env->step(e["action"].get<std::vector<float>>());
      return env->step(e["action"].get<int64_t>());
    }();
    ++steps;
    expect_obs(r.obs, e["obs"], where);
    ASSERT_EQ(r.reward, e["reward"].get<double>()) << where;
    ASSERT_EQ(r.terminated, e["terminated"].get<bool>()) << where;
    ASSERT_FALSE(r.truncated) << where;
    env->observation_space().check(r.obs, "test");
  }
  EXPECT_GE(steps, 200);
}

INSTANTIATE_TEST_SUITE_P(Rl, EnvTrace,
                         ::testing::Values("CartPole-v1", "Acrobot-v1", "MountainCar-v0",
                                           "MountainCarContinuous-v0", "Pendulum-v1", "GridWorld"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(RlEnvs, MakeAddsTheTimeLimit) {
  auto env = make("CartPole-v1");
  EXPECT_EQ(env->name(), "TimeLimit<CartPole-v1>");
  env->reset(0);
  int steps = 0;
  // Alternate pushes keep the pole up for a while; the time limit is 500.
  for (StepResult r;; ) {
    r = env->step(steps % 2);
    ++steps;
    if (r.done()) {
      EXPECT_TRUE(r.terminated || (r.truncated && steps == 500));
      break;
    }
  }
  EXPECT_LE(steps, 500);
  auto p = make("Pendulum-v1");
  p->reset(1);
  StepResult r;
  for (int i = 0; i < 200; ++i) r = p->step(std::vector<float>{0.f});
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
  EXPECT_GE(registered_envs().size(), 6u);
  try {
    make("CartPole-v0");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("CartPole-v1"), std::string::npos) << e.what();
  }
}

TEST(RlEnvs, UserRegisteredEnvironments) {
  register_env("Grid3-v0", [] { return std::make_unique<GridWorld>(GridWorldOptions{.width = 3, .height = 1, .goals = {{0, 2}}}); }, 7);
  auto g = make("Grid3-v0");
  EXPECT_EQ(g->name(), "TimeLimit<GridWorld>");
  g->reset(0);
  EXPECT_FALSE(g->step(1).done());
  EXPECT_TRUE(g->step(1).terminated);
  EXPECT_THROW(register_env("Grid3-v0", [] { return std::make_unique<GridWorld>(); }), ValueError);
  EXPECT_THROW(register_env("CartPole-v1", [] { return std::make_unique<CartPole>(); }), ValueError);
  auto names = registered_envs();
  EXPECT_NE(std::find(names.begin(), names.end(), "Grid3-v0"), names.end());
}

TEST(RlEnvs, SeedsReproduceAndDiffer) {
  for (const auto& name : registered_envs()) {
    if (name == "Grid3-v0") continue;  // registered by another test
    auto a = make(name), b = make(name);
    auto ra = a->reset(123);
    std::vector<float> oa(ra.obs.begin(), ra.obs.end());
    auto rb = b->reset(123);
    EXPECT_EQ(oa, std::vector<float>(rb.obs.begin(), rb.obs.end())) << name;
    Rng rng(1);
    for (int i = 0; i < 50; ++i) {
      ActionValue act = a->action_space().sample(rng);
      auto sa = a->step(act.view());
      std::vector<float> x(sa.obs.begin(), sa.obs.end());
      auto sb = b->step(act.view());
      ASSERT_EQ(x, std::vector<float>(sb.obs.begin(), sb.obs.end())) << name;
      if (sa.done()) {
        a->reset();
        b->reset();
      }
    }
  }
  auto c = make("CartPole-v1");
  auto r1 = c->reset(1);
  std::vector<float> o1(r1.obs.begin(), r1.obs.end());
  auto r2 = c->reset(2);
  EXPECT_NE(o1, std::vector<float>(r2.obs.begin(), r2.obs.end()));
}

TEST(RlEnvs, InvalidActionsNameTheEnvironment) {
  CartPole cp;
  cp.reset(0);
  EXPECT_THROW(cp.step(2), ValueError);
  EXPECT_THROW(cp.step(-1), ValueError);
  EXPECT_THROW(cp.step(std::vector<float>{1.f}), ValueError);
  try {
    cp.step(5);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[CartPole-v1.step] expected an action in Discrete(2), found 5: index 5 is outside [0, 2)");
  }
  Pendulum p;
  p.reset(0);
  EXPECT_THROW(p.step(std::vector<float>{2.5f}), ValueError);
  EXPECT_THROW(p.step(std::vector<float>{NAN}), ValueError);
  EXPECT_THROW(p.step(std::vector<float>{0.f, 0.f}), ValueError);
  EXPECT_THROW(p.step(1), ValueError);
  EXPECT_THROW(p.set_state(std::vector<double>{1.0}), ValueError);
  EXPECT_THROW(GridWorld({.width = 2, .height = 2, .goals = {{2, 0}}}), ValueError);
  EXPECT_THROW(GridWorld({.width = 0}), ValueError);
  EXPECT_THROW(GridWorld({.start = {0, 0}, .walls = {{0, 0}}}), ValueError);
}

TEST(RlEnvs, StateRoundTrips) {
  Acrobot a;
  a.reset(3);
  for (int i = 0; i < 10; ++i) a.step(i % 3);
  auto s = a.state();
  auto r1 = a.step(2);
  std::vector<float> o1(r1.obs.begin(), r1.obs.end());
  a.set_state(s);
  auto r2 = a.step(2);
  EXPECT_EQ(o1, std::vector<float>(r2.obs.begin(), r2.obs.end()));
  GridWorld g({.one_hot = true});
  auto r = g.reset(0);
  EXPECT_EQ(r.obs.size(), 25u);
  EXPECT_EQ(r.obs[0], 1.f);
  auto st = g.step(1);  // right
  EXPECT_EQ(st.obs[1], 1.f);
  EXPECT_DOUBLE_EQ(st.reward, -0.01);
}

}  // namespace

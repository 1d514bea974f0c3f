// Spaces (sampling, bounds, errors), the wrappers and VectorEnv.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/rl/envs.h"
#include "ember/rl/vector_env.h"
#include "ember/rl/wrappers.h"

using namespace ember;
using namespace ember::rl;

namespace {

TEST(RlSpaces, SampleStaysInside) {
  Rng rng(7);
  Discrete d(5, 2);
  MultiDiscrete md({2, 3, 4});
  Box box({-1.f, 0.f, -INFINITY}, {1.f, 5.f, INFINITY});
  Box half({0.f, -INFINITY}, {INFINITY, 3.f});
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 1000; ++i) {
    auto a = d.sample(rng);
    ASSERT_TRUE(d.contains(a.view()));
    ++seen[size_t(a.index - 2)];
    ASSERT_TRUE(md.contains(md.sample(rng).view()));
    ASSERT_TRUE(box.contains(box.sample(rng).view()));
    ASSERT_TRUE(half.contains(half.sample(rng).view()));
  }
  for (int c : seen) EXPECT_GT(c, 150);
  EXPECT_EQ(d.flat_size(), 1);
  EXPECT_EQ(md.flat_size(), 3);
  EXPECT_EQ(box.flat_size(), 3);
  EXPECT_FALSE(box.bounded());
  EXPECT_TRUE(Box(-1.f, 1.f, {2, 3}).bounded());
  EXPECT_EQ(Box(-1.f, 1.f, {2, 3}).flat_size(), 6);
}

TEST(RlSpaces, ContainsAndErrors) {
  Discrete d(3);
  EXPECT_TRUE(d.contains(Action(2)));
  EXPECT_FALSE(d.contains(Action(3)));
  EXPECT_FALSE(d.contains(Action(std::vector<float>{1.f})));
  MultiDiscrete md({2, 3});
  EXPECT_TRUE(md.contains(Action(std::vector<int64_t>{1, 2})));
  EXPECT_FALSE(md.contains(Action(std::vector<int64_t>{2, 0})));
  EXPECT_FALSE(md.contains(Action(std::vector<int64_t>{1})));
  Box b({-1.f, -2.f}, {1.f, 2.f});
  EXPECT_TRUE(b.contains(Action(std::vector<float>{0.5f, -2.f})));
  EXPECT_FALSE(b.contains(Action(std::vector<float>{0.5f, -2.5f})));
  EXPECT_FALSE(b.contains(Action(std::vector<float>{NAN, 0.f})));
  // observations
  std::vector<float> in = {0.f, 1.f}, out = {0.f, 3.f};
  EXPECT_TRUE(b.contains(std::span<const float>(in)));
  EXPECT_FALSE(b.contains(std::span<const float>(out)));
  std::vector<float> one = {2.f}, frac = {1.5f};
  EXPECT_TRUE(d.contains(std::span<const float>(one)));
  EXPECT_FALSE(d.contains(std::span<const float>(frac)));
  try {
    b.check(Action(std::vector<float>{0.5f, -2.5f}), "MyEnv.step");
    FAIL();
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind("[MyEnv.step] expected an action in Box(", 0), 0u) << m;
    EXPECT_NE(m.find("value 1 = -2.5"), std::string::npos) << m;
  }
  try {
    b.check(std::span<const float>(out), "MyEnv.reset");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("expected an observation in Box("), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("value 1 = 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(md.check(Action(std::vector<int64_t>{1}), "x"), ValueError);
  EXPECT_THROW(Discrete(0), ValueError);
  EXPECT_THROW(MultiDiscrete({2, 0}), ValueError);
  EXPECT_THROW(Box({1.f}, {0.f}), ValueError);
  EXPECT_THROW(Box({0.f, 0.f}, {1.f}), ValueError);
  EXPECT_EQ(Discrete(3).str(), "Discrete(3)");
}

// An environment whose observations leave its space after a few steps.
class Leaky : public EnvBase {
 public:
  Leaky() : EnvBase(Box({-1.f}, {1.f}), Discrete(2)) {}
  ResetResult reset(std::optional<uint64_t> seed = {}) override {
    seed_rng(seed);
    obs_[0] = 0;
    return {obs_, {}};
  }
  StepResult step(const Action& a) override {
    obs_[0] += 0.4f;
    return {obs_, 1.0, false, false, {}};
  }
  std::string name() const override { return "Leaky"; }
};

TEST(RlWrappers, CheckSpacesCatchesObservationsOutside) {
  CheckSpaces env(std::make_unique<Leaky>());
  env.reset(0);
  env.step(0);
  env.step(1);
  try {
    env.step(0);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[Leaky.step] expected an observation in Box(", 0), 0u) << e.what();
  }
  EXPECT_THROW(env.step(2), ValueError);
}

TEST(RlWrappers, TimeLimitAndEpisodeStatistics) {
  auto env = std::make_unique<RecordEpisodeStatistics>(
      std::make_unique<TimeLimit>(std::make_unique<Leaky>(), 3), 2);
  RecordEpisodeStatistics& stats = *env;
  for (int ep = 0; ep < 3; ++ep) {
    env->reset(ep);
    StepResult r;
    for (int i = 0; i < 3; ++i) {
      r = env->step(0);
      EXPECT_EQ(r.truncated, i == 2);
      EXPECT_EQ(r.info.has("episode.return"), i == 2);
    }
    EXPECT_DOUBLE_EQ(r.info.get("episode.return"), 3.0);
    EXPECT_DOUBLE_EQ(r.info.get("episode.length"), 3.0);
  }
  EXPECT_EQ(stats.episodes(), 3);
  EXPECT_EQ(stats.returns().size(), 2u);  // the window
  EXPECT_DOUBLE_EQ(stats.mean_return(), 3.0);
  EXPECT_EQ(env->name(), "RecordEpisodeStatistics<TimeLimit<Leaky>>");
  EXPECT_THROW(TimeLimit(std::make_unique<Leaky>(), 0), ValueError);
}

TEST(RlWrappers, RunningMeanStdMatchesGymnasium) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/rl/traces.json");
  auto j = nlohmann::json::parse(f).at("running_mean_std");
  RunningMeanStd rms(3);
  std::vector<std::vector<float>> rows;
  for (const auto& r : j["rows"]) rows.push_back(r.get<std::vector<float>>());
  for (const auto& r : rows) rms.update(r);
  std::vector<float> batch;
  for (int i = 0; i < 3; ++i) batch.insert(batch.end(), rows[size_t(i)].begin(), rows[size_t(i)].end());
  rms.update(batch, 3);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(rms.mean()[k], j["mean"][k].get<double>(), 1e-12);
    EXPECT_NEAR(rms.var()[k], j["var"][k].get<double>(), 1e-12);
  }
  EXPECT_NEAR(rms.count(), j["count"].get<double>(), 1e-12);
  EXPECT_THROW(rms.update(std::vector<float>{1.f, 2.f}), ValueError);
}

TEST(RlWrappers, NormalizeObservationAndReward) {
  NormalizeObservation env(make("CartPole-v1"));
  auto r = env.reset(0);
  // One observation seen: (x - mean) / sqrt(var + eps) with Gymnasium's initial statistics.
  CartPole raw;
  auto o = raw.reset(0);
  RunningMeanStd rms(4);
  rms.update(o.obs);
  std::vector<float> want(4);
  rms.normalize(o.obs, want);
  EXPECT_EQ(std::vector<float>(r.obs.begin(), r.obs.end()), want);
  EXPECT_FALSE(env.observation_space().bounded());
  for (int i = 0; i < 20; ++i) {
    auto s = env.step(i % 2);
    if (s.done()) env.reset();
  }
  EXPECT_NEAR(env.stats().count(), 21.0001, 1e-9);

  NormalizeReward nr(std::make_unique<Leaky>(), {.gamma = 0.5});
  nr.reset(0);
  // Returns 1, 1.5, 1.75: the reward is divided by the std of the returns seen so far.
  RunningMeanStd ret(1);
  double g = 0;
  for (int i = 0; i < 3; ++i) {
    g = g * 0.5 + 1;
    ret.update(std::vector<double>{g});
    EXPECT_DOUBLE_EQ(nr.step(0).reward, 1.0 / std::sqrt(ret.var()[0] + 1e-8));
  }
}

TEST(RlWrappers, FrameStackAndActionRepeat) {
  FrameStack fs(std::make_unique<Leaky>(), 3);
  EXPECT_EQ(fs.observation_space().flat_size(), 3);
  auto r = fs.reset(0);
  EXPECT_EQ(std::vector<float>(r.obs.begin(), r.obs.end()), (std::vector<float>{0, 0, 0}));
  fs.step(0);
  auto s = fs.step(0);
  EXPECT_EQ(std::vector<float>(s.obs.begin(), s.obs.end()), (std::vector<float>{0, 0.4f, 0.8f}));
  FrameStack cp(make("CartPole-v1"), 4);
  EXPECT_EQ(cp.observation_space().flat_size(), 16);
  cp.observation_space().check(cp.reset(1).obs, "test");

  ActionRepeat ar(std::make_unique<TimeLimit>(std::make_unique<Leaky>(), 5), 2);
  ar.reset(0);
  auto a = ar.step(0);
  EXPECT_DOUBLE_EQ(a.reward, 2.0);
  EXPECT_FLOAT_EQ(a.obs[0], 0.8f);
  ar.step(0);
  auto last = ar.step(0);  // steps 5 and stops at the time limit
  EXPECT_DOUBLE_EQ(last.reward, 1.0);
  EXPECT_TRUE(last.truncated);
}

TEST(RlVectorEnv, AutoResetAndThreadsAgree) {
  auto factory = [](int64_t) { return make("CartPole-v1"); };
  VectorEnv sync(4, factory), threaded(4, factory, {.threads = 2});
  EXPECT_EQ(threaded.threads(), 2);
  auto o1 = sync.reset(10);
  auto o2 = threaded.reset(10);
  EXPECT_EQ(std::vector<float>(o1.begin(), o1.end()), std::vector<float>(o2.begin(), o2.end()));
  // Copy i was seeded with 10 + i.
  auto single = make("CartPole-v1");
  auto r = single->reset(12);
  EXPECT_EQ(std::vector<float>(r.obs.begin(), r.obs.end()), std::vector<float>(o1.begin() + 8, o1.begin() + 12));
  Rng rng(0);
  int ends = 0;
  for (int t = 0; t < 200; ++t) {
    std::vector<int64_t> acts(4);
    for (auto& a : acts) a = rng.integer(2);
    const VecStep& a = sync.step(acts);
    const VecStep& b = threaded.step(acts);
    ASSERT_EQ(std::vector<float>(a.obs.begin(), a.obs.end()), std::vector<float>(b.obs.begin(), b.obs.end()));
    for (int64_t i = 0; i < 4; ++i) {
      ASSERT_EQ(a.done(i), b.done(i));
      // The single env follows copy 2 and resets where it ends.
      if (i == 2) {
        auto s = single->step(acts[2]);
        ASSERT_EQ(s.done(), a.done(2));
        if (s.done()) {
          ++ends;
          EXPECT_EQ(std::vector<float>(s.obs.begin(), s.obs.end()),
                    std::vector<float>(a.final_obs.begin() + 8, a.final_obs.begin() + 12));
          auto rr = single->reset();
          EXPECT_EQ(std::vector<float>(rr.obs.begin(), rr.obs.end()),
                    std::vector<float>(a.obs.begin() + 8, a.obs.begin() + 12));
        }
      }
    }
  }
  EXPECT_GT(ends, 3);
  std::vector<int64_t> bad = {0, 1, 2, 0};
  EXPECT_THROW(threaded.step(bad), ValueError);  // a worker's error reaches the caller
  EXPECT_THROW(sync.step(std::vector<int64_t>{0, 1}), ValueError);
  EXPECT_THROW(sync.step(std::vector<float>{0, 1, 0, 1}), ValueError);
}

TEST(RlVectorEnv, ContinuousActionsAndMismatchedSpaces) {
  VectorEnv v(3, [](int64_t) { return make("Pendulum-v1"); }, {.threads = 3});
  v.reset(0);
  std::vector<float> acts = {0.5f, -1.f, 2.f};
  const VecStep& s = v.step(acts);
  EXPECT_EQ(s.rewards.size(), 3u);
  EXPECT_EQ(s.obs.size(), 9u);
  std::vector<std::unique_ptr<Env>> mixed;
  mixed.push_back(make("CartPole-v1"));
  mixed.push_back(make("Acrobot-v1"));
  EXPECT_THROW(VectorEnv(std::move(mixed)), ValueError);
}

}  // namespace

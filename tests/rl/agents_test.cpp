// The agents: a few seconds of DQN, PPO and SAC on the classic environments, and the checkpoint
// check — training interrupted halfway, saved, loaded into a fresh agent and continued ends with
// exactly the parameters and metrics of an uninterrupted run.
#include <gtest/gtest.h>

#include <cmath>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "ember/rl/dqn.h"
#include "ember/rl/ppo.h"
#include "ember/rl/sac.h"
#include "ember/store/safetensors.h"
#include "ember/train/metric_log.h"
#include <sstream>

using namespace ember;
using namespace ember::rl;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() { return fs::temp_directory_path() / ("ember_rl_test_" + std::to_string(::getpid())); }

std::string temp_path(const std::string& name) {
  fs::create_directories(temp_dir());
  return (temp_dir() / name).string();
}

// The checkpoints and logs go when the tests end.
struct RemoveTempDir : ::testing::Environment {
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(temp_dir(), ec);
  }
};
[[maybe_unused]] auto* const remove_temp_dir = ::testing::AddGlobalTestEnvironment(new RemoveTempDir);

void expect_same(const nn::Module& a, const nn::Module& b) {
  auto sa = a.state_dict(), sb = b.state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i)
    ASSERT_EQ(sa[i].second.to_vector<float>(), sb[i].second.to_vector<float>()) << sa[i].first;
}

void expect_same_metrics(Metrics& a, Metrics& b) {
  ASSERT_EQ(a.history().size(), b.history().size());
  ASSERT_FALSE(a.history().empty());
  for (size_t e = 0; e < a.history().size(); ++e) {
    const auto& ra = a.history()[e].train;
    const auto& rb = b.history()[e].train;
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t k = 0; k < ra.size(); ++k) {
      ASSERT_EQ(ra[k].first, rb[k].first);
      if (ra[k].first == "fps") continue;  // wall time
      if (std::isnan(ra[k].second)) ASSERT_TRUE(std::isnan(rb[k].second)) << ra[k].first;
      else ASSERT_EQ(ra[k].second, rb[k].second) << "record " << e << " " << ra[k].first;
    }
  }
  EXPECT_EQ(a.episodes(), b.episodes());
}

auto cartpole = [](int64_t) { return make("CartPole-v1"); };
auto pendulum = [](int64_t) { return make("Pendulum-v1"); };

DQNOptions small_dqn(bool fancy) {
  return {.total_steps = 600, .net = {.hidden = {16, 16}, .dueling = fancy}, .double_q = fancy,
          .buffer_size = 400, .batch_size = 16, .learning_starts = 100, .train_freq = 4,
          .gradient_steps = 1, .target_update = 40, .tau = fancy ? 0.5 : 1.0, .n_step = fancy ? 3 : 1,
          .prioritized = fancy, .seed = 3, .eval_every = 200, .eval_episodes = 2,
          .metrics = {.every = 100}};
}

TEST(RlAgents, DqnResumesBitExactly) {
  for (bool fancy : {false, true}) {
    DQN full(cartpole, small_dqn(fancy));
    full.learn();
    DQN first(cartpole, small_dqn(fancy));
    first.learn(330);  // mid-episode, mid n-step window
    const std::string path = temp_path(fancy ? "dqn_fancy.safetensors" : "dqn.safetensors");
    first.save(path);
    DQN resumed(cartpole, small_dqn(fancy));
    resumed.load(path);
    EXPECT_EQ(resumed.steps(), 330);
    resumed.learn();
    expect_same(full.q(), resumed.q());
    expect_same_metrics(full.metrics(), resumed.metrics());
    EXPECT_GT(full.metrics().episodes(), 5);
  }
}

PPOOptions small_ppo(bool normalize) {
  return {.total_steps = 256, .num_envs = 2, .n_steps = 32, .epochs = 2, .minibatches = 2,
          .normalize_obs = normalize, .hidden = {16}, .seed = 5, .eval_every = 128, .eval_episodes = 1,
          .metrics = {.every = 64}};
}

TEST(RlAgents, PpoResumesBitExactly) {
  for (auto make_env : {EnvFactory(cartpole), EnvFactory(pendulum)}) {
    const bool discrete = make_env == nullptr ? false : make_env(0)->action_space().kind() == Space::Kind::Discrete;
    PPOOptions o = small_ppo(!discrete);
    if (!discrete) o.threads = 2;  // worker threads give the same results
    PPO full(make_env, o);
    full.learn();
    PPO first(make_env, o);
    first.learn(128);
    const std::string path = temp_path("ppo.safetensors");
    first.save(path);
    PPO resumed(make_env, o);
    resumed.load(path);
    resumed.learn();
    EXPECT_EQ(resumed.steps(), 256);
    expect_same(full.actor(), resumed.actor());
    expect_same(full.critic(), resumed.critic());
    expect_same_metrics(full.metrics(), resumed.metrics());
  }
}

SACOptions small_sac() {
  return {.total_steps = 240, .hidden = {16}, .batch_size = 16, .learning_starts = 50, .seed = 2,
          .eval_every = 120, .eval_episodes = 1, .metrics = {.every = 60}};
}

TEST(RlAgents, SacResumesBitExactly) {
  SAC full(pendulum, small_sac());
  full.learn();
  SAC first(pendulum, small_sac());
  first.learn(130);
  const std::string path = temp_path("sac.safetensors");
  first.save(path);
  SAC resumed(pendulum, small_sac());
  resumed.load(path);
  resumed.learn();
  expect_same(full.actor(), resumed.actor());
  expect_same_metrics(full.metrics(), resumed.metrics());
  EXPECT_EQ(full.alpha(), resumed.alpha());
}

TEST(RlAgents, MetricsReachRenderersAndLogs) {
  const std::string log = temp_path("dqn_metrics.csv");
  std::ostringstream shown;
  auto renderer = train::plain_renderer(shown, 0);
  DQNOptions o = small_dqn(false);
  o.metrics.log = log;
  o.metrics.renderer = renderer.get();
  DQN agent(cartpole, o);
  agent.learn();
  auto rows = train::read_metric_log(log);
  ASSERT_EQ(rows.size(), 6u);  // 600 steps, a record every 100
  std::vector<std::string> names;
  for (const auto& [k, v] : rows.back().train) names.push_back(k);
  for (const char* want : {"steps", "episodes", "episode.return", "episode.length", "loss", "eval.return", "fps"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  EXPECT_EQ(rows.back().train.front().second, 600.0);
  EXPECT_NE(shown.str().find("epoch 6/6"), std::string::npos) << shown.str();
  EXPECT_NE(shown.str().find("episode.return"), std::string::npos);
}

TEST(RlAgents, ShortRunsLearnSomething) {
  // PPO on CartPole for 20k steps: the greedy policy beats a random one (~22) by far.
  PPO ppo(cartpole, {.total_steps = 20480, .num_envs = 8, .n_steps = 32, .epochs = 10, .minibatches = 1,
                     .lr = 1e-3, .gamma = 0.98, .gae_lambda = 0.8, .seed = 0});
  ppo.learn();
  EXPECT_GT(ppo.evaluate(5, 99).mean, 100.0);
  EXPECT_GT(ppo.metrics().episodes(), 50);
}

TEST(RlAgents, ErrorsNameTheAgent) {
  EXPECT_THROW(DQN(pendulum, small_dqn(false)), ValueError);
  EXPECT_THROW(SAC(cartpole, small_sac()), ValueError);
  DQN dqn(cartpole, small_dqn(false));
  const std::string path = temp_path("sac_for_dqn.safetensors");
  SAC(pendulum, small_sac()).save(path);
  try {
    dqn.load(path);
    FAIL();
  } catch (const store::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("rl-dqn-checkpoint"), std::string::npos) << e.what();
  }
  // A checkpoint of another network size is refused.
  DQNOptions other = small_dqn(false);
  other.net.hidden = {8, 8};
  const std::string p2 = temp_path("dqn8.safetensors");
  DQN(cartpole, other).save(p2);
  EXPECT_THROW(dqn.load(p2), Error);
}

}  // namespace

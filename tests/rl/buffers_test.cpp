// Replay buffers (uniform, prioritized, n-step), the sum-tree, rollout storage with GAE, policy
// heads and polyak updates.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/rl/normalize.h"
#include "ember/rl/policy.h"
#include "ember/rl/replay.h"
#include "ember/rl/rollout.h"

using namespace ember;
using namespace ember::rl;

namespace {

std::vector<float> obs_of(float v) { return {v, -v}; }

TEST(RlReplay, RingBufferAndSampling) {
  ReplayBuffer buf({.capacity = 4, .obs_size = 2});
  EXPECT_THROW(buf.sample(2, *std::make_unique<Rng>(0)), ValueError);
  for (int i = 0; i < 6; ++i)
    buf.add(obs_of(float(i)), int64_t(i % 3), double(i), obs_of(float(i + 1)), i == 5, 0.99);
  EXPECT_EQ(buf.size(), 4);
  // Slots hold transitions 4, 5, 2, 3.
  std::vector<int64_t> idx = {0, 1, 2, 3};
  ReplayBatch b = buf.gather(idx, Device::flex());
  EXPECT_EQ(b.obs.shape(), (Shape{4, 2}));
  EXPECT_EQ(b.rewards.to_vector<float>(), (std::vector<float>{4, 5, 2, 3}));
  EXPECT_EQ(b.actions.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 2, 0}));
  EXPECT_EQ(b.dones.to_vector<float>(), (std::vector<float>{0, 1, 0, 0}));
  EXPECT_EQ(b.next_obs.to_vector<float>()[2], 6.f);
  EXPECT_FLOAT_EQ(b.discounts.to_vector<float>()[0], 0.99f);
  Rng rng(3);
  ReplayBatch s = buf.sample(64, rng, Device::flex());
  EXPECT_EQ(s.indices.size(), 64u);
  for (int64_t i : s.indices) EXPECT_TRUE(i >= 0 && i < 4);
  EXPECT_THROW(buf.add(std::vector<float>{1.f}, int64_t(0), 0, obs_of(0), false, 1), ValueError);
  EXPECT_THROW(buf.add(obs_of(0), std::vector<float>{1.f}, 0, obs_of(0), false, 1), ValueError);
  EXPECT_THROW(buf.gather(std::vector<int64_t>{4}), IndexError);

  // Round trip through the state dict.
  ReplayBuffer copy({.capacity = 4, .obs_size = 2});
  copy.load_state_dict(buf.state_dict());
  EXPECT_EQ(copy.size(), 4);
  EXPECT_EQ(copy.gather(idx).rewards.to_vector<float>(), b.rewards.to_vector<float>());
  ReplayBuffer wrong({.capacity = 8, .obs_size = 2});
  EXPECT_THROW(wrong.load_state_dict(buf.state_dict()), ValueError);
}

TEST(RlReplay, ContinuousActions) {
  ReplayBuffer buf({.capacity = 8, .obs_size = 2, .discrete = false, .action_size = 1});
  buf.add(obs_of(1), std::vector<float>{0.25f}, 1, obs_of(2), false, 0.9);
  ReplayBatch b = buf.gather(std::vector<int64_t>{0});
  EXPECT_EQ(b.actions.shape(), (Shape{1, 1}));
  EXPECT_FLOAT_EQ(b.actions.to_vector<float>()[0], 0.25f);
}

TEST(RlReplay, SumTree) {
  SumTree t(5);
  for (int i = 0; i < 5; ++i) t.set(i, double(i + 1));  // 1..5, total 15
  EXPECT_DOUBLE_EQ(t.total(), 15);
  EXPECT_DOUBLE_EQ(t.min(), 1);
  EXPECT_EQ(t.find(0.0), 0);
  EXPECT_EQ(t.find(0.99), 0);
  EXPECT_EQ(t.find(1.0), 1);
  EXPECT_EQ(t.find(5.99), 2);
  EXPECT_EQ(t.find(14.99), 4);
  t.set(4, 0);
  EXPECT_DOUBLE_EQ(t.total(), 10);
  EXPECT_EQ(t.find(9.99), 3);
  EXPECT_THROW(t.set(5, 1), ValueError);
  EXPECT_THROW(t.set(0, -1), ValueError);
}

TEST(RlReplay, PrioritizedSamplesByPriority) {
  PrioritizedReplayBuffer buf({.capacity = 4, .obs_size = 2}, {.alpha = 1.0, .beta = 1.0});
  for (int i = 0; i < 4; ++i) buf.add(obs_of(float(i)), int64_t(0), 0, obs_of(0), false, 1);
  // Priorities 1, 1, 1, 7 (|td| + eps): index 3 holds 70% of the mass.
  buf.update_priorities(std::vector<int64_t>{0, 1, 2, 3}, std::vector<float>{1, 1, 1, 7});
  Rng rng(0);
  int64_t threes = 0, total = 0;
  for (int k = 0; k < 200; ++k) {
    ReplayBatch b = buf.sample(10, rng);
    auto w = b.weights.to_vector<float>();
    for (size_t j = 0; j < b.indices.size(); ++j) {
      threes += b.indices[j] == 3;
      ++total;
      // w = (N p / total)^-1 / max: 1 for the smallest priority, 1/7 for index 3.
      EXPECT_NEAR(w[j], b.indices[j] == 3 ? 1.0 / 7.0 : 1.0, 1e-5);
    }
  }
  EXPECT_NEAR(double(threes) / double(total), 0.7, 0.03);
  // A new transition gets the largest priority so far.
  buf.add(obs_of(9), int64_t(0), 0, obs_of(0), false, 1);
  EXPECT_NEAR(buf.priority(0), 7.0, 1e-5);
  EXPECT_THROW(buf.update_priorities(std::vector<int64_t>{0}, std::vector<float>{NAN}), ValueError);
  EXPECT_THROW(buf.update_priorities(std::vector<int64_t>{9}, std::vector<float>{1}), IndexError);
  PrioritizedReplayBuffer copy({.capacity = 4, .obs_size = 2}, {.alpha = 1.0, .beta = 1.0});
  copy.load_state_dict(buf.state_dict());
  EXPECT_DOUBLE_EQ(copy.priority(3), buf.priority(3));
}

TEST(RlReplay, NStepReturns) {
  ReplayBuffer buf({.capacity = 16, .obs_size = 2});
  NStepCollector ns(3, 0.5, 1);
  // Rewards 1, 2, 4, 8 then the episode terminates.
  for (int t = 0; t < 4; ++t)
    ns.add(0, obs_of(float(t)), int64_t(t), double(1 << t), obs_of(float(t + 1)), t == 3, false, buf);
  ASSERT_EQ(buf.size(), 4);
  ReplayBatch b = buf.gather(std::vector<int64_t>{0, 1, 2, 3});
  // t=0: 1 + 0.5*2 + 0.25*4 = 3, next obs 3, discount 0.125
  // t=1: 2 + 0.5*4 + 0.25*8 = 6, next obs 4 (terminal)
  // t=2: 4 + 0.5*8 = 8; t=3: 8 (both terminal)
  EXPECT_EQ(b.rewards.to_vector<float>(), (std::vector<float>{3, 6, 8, 8}));
  EXPECT_EQ(b.discounts.to_vector<float>(), (std::vector<float>{0.125f, 0.125f, 0.25f, 0.5f}));
  EXPECT_EQ(b.dones.to_vector<float>(), (std::vector<float>{0, 1, 1, 1}));
  auto next = b.next_obs.to_vector<float>();
  EXPECT_EQ(next[0], 3.f);
  EXPECT_EQ(next[2], 4.f);
  EXPECT_EQ(b.actions.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  // A truncated episode flushes without the terminal flag.
  ns.add(0, obs_of(0), int64_t(0), 1.0, obs_of(1), false, true, buf);
  EXPECT_EQ(buf.size(), 5);
  EXPECT_EQ(buf.gather(std::vector<int64_t>{4}).dones.to_vector<float>()[0], 0.f);
}

TEST(RlRollout, GaeMatchesReference) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/rl/traces.json");
  auto j = nlohmann::json::parse(f).at("gae");
  auto rewards = j["rewards"].get<std::vector<float>>(), values = j["values"].get<std::vector<float>>();
  auto dones = j["dones"].get<std::vector<uint8_t>>();
  auto last = j["last_values"].get<std::vector<float>>();
  std::vector<float> adv(rewards.size()), ret(rewards.size());
  compute_gae(rewards, values, dones, last, j["num_envs"], j["gamma"], j["lambda"], adv, ret);
  for (size_t k = 0; k < adv.size(); ++k) {
    EXPECT_NEAR(adv[k], j["advantages"][k].get<double>(), 1e-5) << k;
    EXPECT_NEAR(ret[k], j["returns"][k].get<double>(), 1e-5) << k;
  }
  // Through RolloutStorage, with a truncation bootstrapped by V(final).
  const int64_t T = 6, N = 2;
  RolloutStorage rs({.steps = T, .num_envs = N, .obs_size = 1});
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> o(N, float(t)), a(N, 1.f), lp(N, -0.5f), v(values.begin() + t * N, values.begin() + (t + 1) * N);
    std::vector<double> r(rewards.begin() + t * N, rewards.begin() + (t + 1) * N);
    std::vector<uint8_t> term(dones.begin() + t * N, dones.begin() + (t + 1) * N), trunc(N, 0);
    rs.add({o, a, lp, v, r, term, trunc});
  }
  EXPECT_TRUE(rs.full());
  EXPECT_THROW(rs.add({}), ValueError);
  rs.compute_returns(last, j["gamma"], j["lambda"]);
  for (size_t k = 0; k < adv.size(); ++k) EXPECT_FLOAT_EQ(rs.advantages()[k], adv[k]);
  Rng rng(1);
  auto mbs = rs.minibatches(4, rng, Device::flex());
  ASSERT_EQ(mbs.size(), 4u);
  int64_t seen = 0;
  double adv_sum = 0;
  for (const auto& mb : mbs) {
    seen += mb.obs.size(0);
    EXPECT_EQ(mb.actions.dtype(), DType::I64);
    for (float x : mb.advantages.to_vector<float>()) adv_sum += x;
  }
  EXPECT_EQ(seen, T * N);
  double want = 0;
  for (float x : adv) want += x;
  EXPECT_NEAR(adv_sum, want, 1e-4);

  // One step, one env, truncated: advantage = r + gamma * V(final) - V.
  RolloutStorage one({.steps = 1, .num_envs = 1, .obs_size = 1});
  std::vector<float> o = {0}, a = {0}, lp = {0}, v = {0.5f}, fv = {2.f};
  std::vector<double> r = {1};
  std::vector<uint8_t> term = {0}, trunc = {1};
  one.add({o, a, lp, v, r, term, trunc, fv});
  one.compute_returns(std::vector<float>{100.f}, 0.9, 0.95);
  EXPECT_FLOAT_EQ(one.advantages()[0], 1 + 0.9f * 2 - 0.5f);
}

TEST(RlHeads, CategoricalAndEpsilonGreedy) {
  Tensor logits = tensor(std::vector<float>{0.f, std::log(3.f), 0.f, 0.f}, {2, 2});
  Categorical c(logits);
  auto p = c.probs().to_vector<float>();
  EXPECT_NEAR(p[0], 0.25, 1e-6);
  EXPECT_NEAR(p[1], 0.75, 1e-6);
  auto lp = c.log_prob(tensor({1, 0})).to_vector<float>();
  EXPECT_NEAR(lp[0], std::log(0.75), 1e-6);
  EXPECT_NEAR(lp[1], std::log(0.5), 1e-6);
  auto h = c.entropy().to_vector<float>();
  EXPECT_NEAR(h[1], std::log(2.0), 1e-6);
  EXPECT_EQ(c.mode(), (std::vector<int64_t>{1, 0}));
  Rng rng(4);
  int ones = 0;
  for (int i = 0; i < 4000; ++i) ones += c.sample(rng)[0] == 1;
  EXPECT_NEAR(ones / 4000.0, 0.75, 0.03);
  EXPECT_THROW(c.log_prob(tensor({1})), ShapeError);

  Tensor q = tensor(std::vector<float>{1, 5, 2, 9, 0, 0}, {2, 3});
  EXPECT_EQ(epsilon_greedy(q, 0.0, rng), (std::vector<int64_t>{1, 0}));
  int random_picks = 0;
  for (int i = 0; i < 1000; ++i) random_picks += epsilon_greedy(q, 1.0, rng)[0] != 1;
  EXPECT_NEAR(random_picks / 1000.0, 2.0 / 3.0, 0.05);
  LinearSchedule s{.start = 1.0, .end = 0.1, .steps = 100};
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_NEAR(s.at(50), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(s.at(1000), 0.1);
}

TEST(RlHeads, GaussiansAndTheirGradients) {
  Tensor mean = tensor(std::vector<float>{0.5f, -1.f}, {1, 2});
  Tensor log_std = tensor(std::vector<float>{0.f, std::log(2.f)}, {1, 2});
  DiagGaussian g(mean, log_std);
  Tensor x = tensor(std::vector<float>{1.f, 1.f}, {1, 2});
  // log N(1; 0.5, 1) + log N(1; -1, 2)
  const double want = (-0.125 - 0.9189385332) + (-0.5 - std::log(2.0) - 0.9189385332);
  EXPECT_NEAR(g.log_prob(x).item<float>(), want, 1e-5);
  EXPECT_NEAR(g.entropy().item<float>(), 2 * 1.4189385332 + std::log(2.0), 1e-5);
  Tensor noise = tensor(std::vector<float>{1.f, -0.5f}, {1, 2});
  EXPECT_EQ(g.rsample(noise).to_vector<float>(), (std::vector<float>{1.5f, -2.f}));

  // Tanh-squashed with scale 2: log p(a) = log N(u) - log(1 - tanh(u)^2) - log 2.
  Tensor m = tensor(std::vector<float>{0.3f}, {1, 1}).requires_grad_();
  Tensor ls = tensor(std::vector<float>{-0.5f}, {1, 1}).requires_grad_();
  TanhGaussian tg(m, ls, {2.f}, {0.f});
  auto [a, logp] = tg.rsample(tensor(std::vector<float>{0.7f}, {1, 1}));
  const double u = 0.3 + std::exp(-0.5) * 0.7;
  EXPECT_NEAR(a.item<float>(), 2 * std::tanh(u), 1e-6);
  const double lpn = -0.5 * 0.49 + 0.5 - 0.9189385332;
  EXPECT_NEAR(logp.item<float>(), lpn - std::log(1 - std::tanh(u) * std::tanh(u)) - std::log(2.0), 1e-5);
  Gradients grads = (a.sum() + logp.sum()).backward();
  EXPECT_TRUE(grads.contains(m));
  // d a / d mean = 2 (1 - tanh^2); d logp / d mean = 2 tanh(u) (the squash correction's).
  const double t = std::tanh(u);
  EXPECT_NEAR(grads.get(m).item<float>(), 2 * (1 - t * t) + 2 * t, 1e-4);
  EXPECT_NEAR(tg.mode().item<float>(), 2 * std::tanh(0.3), 1e-6);
  EXPECT_THROW(TanhGaussian(m, ls, {0.f}), ValueError);
  EXPECT_THROW(DiagGaussian(mean, tensor(std::vector<float>{0.f}, {1, 1})), ShapeError);
}

TEST(RlHeads, PolyakUpdateAndAdvantageNormalisation) {
  manual_seed(0);
  nn::Linear a({.in = 3, .out = 2}), b({.in = 3, .out = 2});
  auto wa = a.weight.to_vector<float>(), wb = b.weight.to_vector<float>();
  polyak_update(a, b, 0.25);
  auto w = a.weight.to_vector<float>();
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(w[i], 0.75f * wa[i] + 0.25f * wb[i], 1e-6);
  hard_update(a, b);
  EXPECT_EQ(a.weight.to_vector<float>(), wb);
  nn::Linear c({.in = 4, .out = 2});
  EXPECT_THROW(polyak_update(a, c, 0.5), ValueError);
  EXPECT_THROW(polyak_update(a, b, 1.5), ValueError);

  Tensor adv = tensor({1.f, 2.f, 3.f, 4.f});
  auto n = normalize_advantages(adv).to_vector<float>();
  const double sd = std::sqrt(5.0 / 3.0);
  EXPECT_NEAR(n[0], -1.5 / sd, 1e-5);
  EXPECT_NEAR(n[3], 1.5 / sd, 1e-5);
}

}  // namespace

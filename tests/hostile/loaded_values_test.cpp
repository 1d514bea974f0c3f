// Values that come from a file get the checks their constructors make: an optimizer state with
// lr = -5, a scheduler with t_i = 0 or last_epoch = NaN, a checkpoint claiming INT64_MAX epochs
// or 1e300 seconds are refused (ValueError or FormatError naming the owner), and nothing changes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"
#include "ember/store/state.h"
#include "ember/train/learner.h"
#include "hostile/expect_error.h"
#include "hostile/learner_util.h"
#include "store/store_test_util.h"

using namespace ember;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<Tensor> params() { return {ones({2}).requires_grad_()}; }

optim::State with(optim::State s, const std::string& key, double v) {
  s.scalars[key] = v;
  return s;
}
}  // namespace

TEST(HostileValues, OptimizerStateGetsTheConstructorsChecks) {
  optim::Adam adam(params(), {.lr = 0.1});
  optim::State good = adam.state_dict();
  for (double lr : {-5.0, kNaN, kInf})
    EXPECT_ERROR(adam.load_state_dict(with(good, "group.0.lr", lr)), ValueError, "Adam");
  EXPECT_ERROR(adam.load_state_dict(with(good, "group.0.momentum", 1.5)), ValueError, "Adam");
  for (double step : {kNaN, 1e300, -1.0, 1.5, kInf})
    EXPECT_ERROR(adam.load_state_dict(with(good, "state.0.step", step)), ValueError, "Adam");
  EXPECT_ERROR(adam.load_state_dict(with(good, "group.0.initial_lr", -1)), ValueError, "Adam");
  optim::State undefined = good;
  undefined.tensors["state.0.exp_avg"] = Tensor();
  EXPECT_ERROR(adam.load_state_dict(undefined), ValueError, "Adam");
  EXPECT_EQ(adam.lr(0), 0.1);  // unchanged by every refused load
  optim::SGD sgd(params(), {.lr = 0.1, .momentum = 0.9});
  EXPECT_ERROR(sgd.load_state_dict(with(sgd.state_dict(), "group.0.momentum", -1)), ValueError,
               "SGD");
  EXPECT_EQ(*sgd.momentum(0), 0.9);
  EXPECT_NO_THROW(adam.load_state_dict(with(good, "group.0.lr", 0.5)));
  EXPECT_EQ(adam.lr(0), 0.5);
}

TEST(HostileValues, SchedulerStateGetsTheConstructorsChecks) {
  optim::SGD opt(params(), {.lr = 0.1});
  optim::CosineAnnealingWarmRestarts s(opt, 3);
  optim::State good = s.state_dict();
  const char* name = "CosineAnnealingWarmRestarts";
  EXPECT_ERROR(s.load_state_dict(with(good, "t_i", 0)), ValueError, name);  // divides by t_i
  EXPECT_ERROR(s.load_state_dict(with(good, "t_i", kNaN)), ValueError, name);
  EXPECT_ERROR(s.load_state_dict(with(good, "t_cur", 7)), ValueError, name);
  EXPECT_ERROR(s.load_state_dict(with(good, "last_epoch", kNaN)), ValueError, name);
  EXPECT_ERROR(s.load_state_dict(with(good, "last_epoch", 1e300)), ValueError, name);
  EXPECT_ERROR(s.load_state_dict(with(good, "last_epoch", 0.5)), ValueError, name);
  EXPECT_ERROR(s.load_state_dict(with(good, "step_count", -1)), ValueError, name);
  EXPECT_ERROR(s.load_state_dict(with(good, "base_lr.0", -1)), ValueError, name);
  EXPECT_ERROR(s.load_state_dict(with(good, "last_lr.0", kInf)), ValueError, name);
  EXPECT_EQ(s.last_epoch(), 0);
  s.step();
  EXPECT_EQ(s.last_epoch(), 1);
  EXPECT_ERROR(optim::ExponentialLR(opt, kNaN), ValueError, "ExponentialLR");
  EXPECT_ERROR(optim::StepLR(opt, 1, -0.5), ValueError, "StepLR");
  EXPECT_ERROR(optim::MultiStepLR(opt, {1}, kInf), ValueError, "MultiStepLR");
}

TEST(HostileValues, CompositesCheckValuesBeforeChangingAny) {
  optim::SGD opt(params(), {.lr = 0.1});
  auto a = std::make_shared<optim::StepLR>(opt, 2);
  auto b = std::make_shared<optim::CosineAnnealingWarmRestarts>(opt, 3);
  optim::SequentialLR seq(opt, {a, b}, {2});
  for (int i = 0; i < 3; ++i) seq.step();
  optim::State st = seq.state_dict();
  const int64_t a_epoch = a->last_epoch();
  EXPECT_ERROR(
      seq.load_state_dict(with(with(st, "scheduler.0.last_epoch", 40), "scheduler.1.t_i", 0)),
      ValueError, "CosineAnnealingWarmRestarts");
  EXPECT_EQ(a->last_epoch(), a_epoch);
  optim::SGD opt2(params(), {.lr = 0.1});
  auto c = std::make_shared<optim::StepLR>(opt2, 2);
  auto d = std::make_shared<optim::CosineAnnealingWarmRestarts>(opt2, 3);
  optim::ChainedScheduler chain({c, d});
  chain.step();
  EXPECT_ERROR(chain.load_state_dict(with(with(chain.state_dict(), "scheduler.0.last_epoch", 40),
                                          "scheduler.1.last_epoch", kNaN)),
               ValueError, "CosineAnnealingWarmRestarts");
  EXPECT_EQ(c->last_epoch(), 1);
}

TEST(HostileValues, StateFilesWithBadValuesChangeNothing) {
  test::ScratchDir dir;
  std::string p = dir.file("opt.safetensors");
  optim::Adam adam(params(), {.lr = 0.1});
  store::save_state(p, with(adam.state_dict(), "group.0.lr", -5),
                    {{"ember.kind", "optimizer"}, {"ember.optimizer", "Adam"}});
  EXPECT_ERROR(store::load_optimizer(p, adam), ValueError, "Adam");
  EXPECT_EQ(adam.lr(0), 0.1);
  store::save_state(p, {}, {{"ember.kind", "optimizer"}, {"ember.optimizer", "Adam"}});
  EXPECT_ERROR(store::load_optimizer(p, adam), ValueError, "Adam");  // no group.0.lr
}

TEST(HostileValues, CheckpointValuesAreBounded) {
  test::TinyRun first;
  std::string ck = first.checkpoint();
  ASSERT_FALSE(ck.empty());
  test::TinyRun other;
  std::string bad = other.dir.file("bad.safetensors");
  Tensor before = other.net.state_dict()[0].second.clone();
  const double lr_before = other.opt.lr(0);
  using J = nlohmann::json;
  auto refuse = [&](auto edit) {
    test::rewrite_checkpoint(ck, bad, edit);
    EXPECT_ERROR(other.learner->load_checkpoint(bad), store::FormatError, "Learner");
    EXPECT_TRUE(equal(other.net.state_dict()[0].second, before));
    EXPECT_EQ(other.opt.lr(0), lr_before);
  };
  refuse([](J& j, store::Metadata&) { j["epochs_done"] = std::numeric_limits<int64_t>::max(); });
  refuse([](J& j, store::Metadata&) { j["epochs_done"] = -1; });
  refuse([](J& j, store::Metadata&) { j["epochs_done"] = 1.5; });
  refuse([](J& j, store::Metadata&) { j["step"] = int64_t(1) << 60; });
  refuse([](J& j, store::Metadata&) { j["global_step"] = 1e300; });
  refuse([](J& j, store::Metadata&) { j["bad_epochs"] = std::numeric_limits<uint64_t>::max(); });
  refuse([](J& j, store::Metadata&) { j["seconds"] = 1e300; });
  refuse([](J& j, store::Metadata&) { j["seconds"] = -1.0; });
  refuse([](J& j, store::Metadata&) { j["seconds"] = "soon"; });
  refuse([](J& j, store::Metadata&) { j["rng"] = J::array({1, 2, 3}); });
  refuse([](J& j, store::Metadata&) { j["rng"] = J::array({-1}); });
  refuse([](J& j, store::Metadata&) { j["optimizer"] = 5; });
  refuse([](J& j, store::Metadata& md) {  // 1e400 parses as inf (nlohmann would dump inf as null)
    j["best"] = 0.125;
    std::string s = j.dump();
    md["ember.learner"] = s.replace(s.find("0.125"), 5, "1e400");
    j = nullptr;
  });
  refuse([](J&, store::Metadata& md) { md["ember.history"] = R"([{"epoch": -5, "seconds": 1}])"; });
  refuse(
      [](J&, store::Metadata& md) { md["ember.history"] = R"([{"epoch": 1, "seconds": 1e300}])"; });
  // A scheduler state the scheduler would refuse: found before the model is touched.
  test::TinyRun with_sched;
  optim::StepLR sched(with_sched.opt, 2);
  with_sched.learner->set_scheduler(sched);
  std::string sck = with_sched.checkpoint();
  store::StateFile sf = store::load_state(sck);
  sf.state.scalars["scheduler.last_epoch"] = kNaN;
  std::string sbad = with_sched.dir.file("sbad.safetensors");
  store::save_state(sbad, sf.state, sf.metadata);
  Tensor wbefore = with_sched.net.state_dict()[0].second.clone();
  with_sched.net.state_dict()[0].second.detach().add_(1);  // differs from the file's
  Tensor wmod = with_sched.net.state_dict()[0].second.clone();
  EXPECT_ERROR(with_sched.learner->load_checkpoint(sbad), ValueError, "StepLR");
  EXPECT_TRUE(equal(with_sched.net.state_dict()[0].second, wmod));
  // The untouched checkpoint still loads.
  EXPECT_NO_THROW(other.learner->load_checkpoint(ck));
}

// Replays torch 1.13's scheduler runs (tests/gen/gen_optim.py): the groups' lrs and
// get_last_lr() after construction and after each step, and save/load mid-run.
#include <gtest/gtest.h>

#include <cmath>

#include "optim/optim_support.h"

namespace ember {
namespace {

using test_optim::json;

struct SchedRun {
  std::vector<Tensor> params;
  std::unique_ptr<optim::Optimizer> opt;
  std::shared_ptr<optim::LRScheduler> sched;
};

SchedRun make_sched_run(const json& c) {
  SchedRun r;
  auto lrs = c["base_lrs"].get<std::vector<double>>();
  for (size_t g = 0; g < lrs.size(); ++g) r.params.push_back(zeros({1}).requires_grad_());
  test_optim::json groups = test_optim::json::array();
  for (size_t g = 0; g < lrs.size(); ++g) groups.push_back({{g}, {{"lr", lrs[g]}}});
  r.opt = test_optim::make_optimizer(c["optimizer"], groups, r.params);
  r.sched = test_optim::make_scheduler(*r.opt, c["spec"]);
  return r;
}

void expect_lrs(const json& c, const SchedRun& r, size_t step) {
  auto want = c["lrs"][step].get<std::vector<double>>();
  auto want_last = c["last_lr"][step].get<std::vector<double>>();
  ASSERT_EQ(r.sched->get_last_lr().size(), want_last.size());
  for (size_t g = 0; g < want.size(); ++g) {
    EXPECT_NEAR(r.opt->lr(g), want[g], 1e-12 * std::max(1.0, std::abs(want[g])))
        << c["name"] << " step " << step << " group " << g;
    EXPECT_NEAR(r.sched->get_last_lr()[g], want_last[g], 1e-12)
        << c["name"] << " step " << step << " group " << g;
    EXPECT_NEAR(*r.opt->momentum(g), c["momenta"][step][g].get<double>(), 1e-12)
        << c["name"] << " momentum, step " << step << " group " << g;
  }
}

TEST(SchedulerGolden, LrsMatchTorch) {
  json cases = test_optim::load_golden("schedulers.json")["cases"];
  ASSERT_GE(cases.size(), 15u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    SchedRun r = make_sched_run(c);
    expect_lrs(c, r, 0);
    for (size_t s = 1; s < c["lrs"].size(); ++s) {
      r.sched->step();
      expect_lrs(c, r, s);
    }
  }
}

TEST(SchedulerGolden, SaveLoadMidRunContinues) {
  json cases = test_optim::load_golden("schedulers.json")["cases"];
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    size_t steps = c["lrs"].size() - 1, half = steps / 2 + 1;
    SchedRun a = make_sched_run(c);
    for (size_t s = 1; s <= half; ++s) a.sched->step();
    optim::State opt_state = a.opt->state_dict(), sched_state = a.sched->state_dict();
    SchedRun b = make_sched_run(c);
    b.opt->load_state_dict(opt_state);
    b.sched->load_state_dict(sched_state);
    expect_lrs(c, b, half);
    for (size_t s = half + 1; s <= steps; ++s) {
      b.sched->step();
      expect_lrs(c, b, s);
    }
  }
}

}  // namespace
}  // namespace ember

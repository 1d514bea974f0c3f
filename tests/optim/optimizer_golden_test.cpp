// Replays torch 1.13's 20-step optimizer runs (tests/gen/gen_optim.py) and checks every step,
// then checks that saving and loading state mid-run continues identically.
#include <gtest/gtest.h>

#include <cmath>

#include "optim/optim_support.h"

namespace ember {
namespace {

using test_optim::json;

struct OptRun {
  std::vector<Tensor> params;
  std::unique_ptr<optim::Optimizer> opt;
};

DType dtype_of(const json& c) { return c["dtype"] == "float32" ? kF32 : kF64; }

std::vector<Tensor> make_params(const json& c, const json& values) {
  std::vector<Tensor> ps;
  for (size_t i = 0; i < values.size(); ++i)
    ps.push_back(tensor(values[i].get<std::vector<double>>(),
                        Shape(c["shapes"][i].get<std::vector<int64_t>>()), dtype_of(c))
                     .requires_grad_());
  return ps;
}

OptRun make_run(const json& c, const json& values) {
  OptRun r{make_params(c, values), nullptr};
  r.opt = test_optim::make_optimizer(c["optimizer"], c["groups"], r.params);
  return r;
}

void do_step(const json& c, OptRun& r, size_t step) {
  Gradients g;
  const json& row = c["grads"][step];
  for (size_t i = 0; i < r.params.size(); ++i) {
    if (row[i].is_null()) continue;
    g.set(r.params[i], tensor(row[i].get<std::vector<double>>(), r.params[i].shape(),
                              dtype_of(c)));
  }
  r.opt->step(g);
}

void expect_close(const json& c, const OptRun& r, size_t step) {
  double tol = c["tol"];
  for (size_t i = 0; i < r.params.size(); ++i) {
    auto got = r.params[i].to(kF64).to_vector<double>();
    auto want = c["expected"][step][i].get<std::vector<double>>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
      ASSERT_NEAR(got[k], want[k], tol * std::max(1.0, std::abs(want[k])))
          << c["name"] << " step " << step << " param " << i << " element " << k;
  }
}

// Every case on the default device; checks the state lives on the params' device.
void replay_all() {
  json cases = test_optim::load_golden("optimizers.json")["cases"];
  ASSERT_GE(cases.size(), 18u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    OptRun r = make_run(c, c["params"]);
    for (size_t s = 0; s < c["grads"].size(); ++s) {
      do_step(c, r, s);
      expect_close(c, r, s);
    }
    for (const auto& [key, t] : r.opt->state_dict().tensors)
      EXPECT_EQ(t.device().backend(), r.params[0].device().backend()) << key;
  }
}

TEST(OptimGolden, TwentyStepsMatchTorch) { replay_all(); }

TEST(OptimGolden, TwentyStepsMatchTorchOnCpu) {
  DeviceGuard on_cpu(Device::cpu());
  replay_all();
}

TEST(OptimGolden, SaveLoadMidRunContinuesIdentically) {
  json cases = test_optim::load_golden("optimizers.json")["cases"];
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    size_t steps = c["grads"].size(), half = steps / 2;
    OptRun whole = make_run(c, c["params"]);
    for (size_t s = 0; s < steps; ++s) do_step(c, whole, s);

    OptRun first = make_run(c, c["params"]);
    for (size_t s = 0; s < half; ++s) do_step(c, first, s);
    optim::State saved = first.opt->state_dict();
    // A fresh optimizer over fresh parameters holding the mid-run values.
    json values = json::array();
    for (const auto& p : first.params) values.push_back(p.to(kF64).to_vector<double>());
    OptRun second = make_run(c, values);
    second.opt->load_state_dict(saved);
    for (size_t s = half; s < steps; ++s) do_step(c, second, s);
    for (size_t i = 0; i < whole.params.size(); ++i)
      EXPECT_EQ(whole.params[i].to(kF64).to_vector<double>(),
                second.params[i].to(kF64).to_vector<double>())
          << "param " << i;
  }
}

TEST(OptimGolden, StateDictHoldsBuffersStepsAndLrs) {
  Tensor w = tensor({1.0, 2.0}).requires_grad_();
  optim::Adam opt({w}, {.lr = 0.1, .amsgrad = true});
  Gradients g;
  g.set(w, tensor({0.5, -0.5}));
  opt.step(g);
  opt.step(g);
  optim::State s = opt.state_dict();
  EXPECT_EQ(s.scalars.at("state.0.step"), 2);
  EXPECT_EQ(s.scalars.at("group.0.lr"), 0.1);
  EXPECT_EQ(s.tensors.size(), 3u);
  // exp_avg after two steps of a constant gradient: g * (1 - 0.9^2).
  auto m = s.tensors.at("state.0.exp_avg").to_vector<double>();
  EXPECT_NEAR(m[0], 0.5 * (1 - 0.81), 1e-15);
  // The saved tensors are copies: stepping again does not change them.
  opt.step(g);
  EXPECT_NEAR(s.tensors.at("state.0.exp_avg").to_vector<double>()[0], 0.5 * 0.19, 1e-15);
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST(OptimGolden, ClippingMatchesTorch) {
  json cases = test_optim::load_golden("clip.json")["cases"];
  ASSERT_EQ(cases.size(), 6u);
  for (const auto& c : cases) {
    std::vector<Tensor> params;
    Gradients grads;
    for (size_t i = 0; i < c["grads"].size(); ++i) {
      Shape shape(c["shapes"][i].get<std::vector<int64_t>>());
      params.push_back(zeros(shape, {.dtype = kF64}).requires_grad_());
      grads.set(params.back(), tensor(c["grads"][i].get<std::vector<double>>(), shape));
    }
    if (c["kind"] == "norm") {
      double norm_type =
          c["norm_type"].is_string() ? optim::kInfNorm : c["norm_type"].get<double>();
      double total = optim::clip_grad_norm(grads, params, c["max"], norm_type);
      EXPECT_NEAR(total, c["total"].get<double>(), 1e-12) << norm_type;
    } else {
      optim::clip_grad_value(grads, params, c["max"]);
    }
    for (size_t i = 0; i < params.size(); ++i) {
      auto got = params[i].grad(grads).to_vector<double>();
      auto want = c["expected"][i].get<std::vector<double>>();
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-12);
    }
  }
}

}  // namespace
}  // namespace ember

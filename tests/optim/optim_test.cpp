// Optimizer behaviour not covered by the goldens: errors, skipping, accumulation, clipping.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ember/ember.h"
#include "ember/optim/clip.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"

namespace ember {
namespace {

template <class F>
std::string value_error(F&& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no ValueError";
}

TEST(Optim, BadOptionsThrowValueErrorNamingTheOptimizer) {
  Tensor w = zeros({2}).requires_grad_();
  auto starts = [](const std::string& msg, const std::string& prefix) {
    return msg.rfind(prefix, 0) == 0;
  };
  EXPECT_TRUE(starts(value_error([&] { optim::SGD({w}, {.lr = -1}); }), "[SGD] expected lr"));
  EXPECT_TRUE(starts(value_error([&] { optim::SGD({w}, {.lr = 0.1, .nesterov = true}); }),
                     "[SGD] expected momentum > 0"));
  EXPECT_TRUE(starts(value_error([&] { optim::Adam({w}, {.betas = {1.0, 0.9}}); }),
                     "[Adam] expected betas.first in [0, 1)"));
  EXPECT_TRUE(starts(value_error([&] { optim::AdamW({w}, {.lr = 0.1, .betas = {0.9, -0.1}}); }),
                     "[AdamW] expected betas.second"));
  EXPECT_TRUE(
      starts(value_error([&] { optim::Adam({w}, {.eps = -1e-8}); }), "[Adam] expected eps"));
  EXPECT_TRUE(starts(value_error([&] { optim::RMSprop({w}, {.alpha = -0.5}); }),
                     "[RMSprop] expected alpha"));
  EXPECT_TRUE(starts(value_error([&] { optim::Adagrad({w}, {.lr_decay = -1}); }),
                     "[Adagrad] expected lr_decay"));
  EXPECT_TRUE(starts(value_error([&] { optim::Lion({w}, {.lr = std::nan("")}); }),
                     "[Lion] expected lr"));
  EXPECT_TRUE(starts(value_error([&] { optim::SGD({w, w}, {.lr = 0.1}); }),
                     "[SGD] expected each parameter in one group once"));
  EXPECT_TRUE(starts(value_error([&] { optim::SGD({arange(3)}, {.lr = 0.1}); }),
                     "[SGD] expected floating-point parameters"));
  optim::SGD opt({w}, {.lr = 0.1});
  EXPECT_TRUE(starts(value_error([&] { opt.add_param_group({w}); }), "[SGD] expected each"));
  EXPECT_TRUE(starts(value_error([&] { opt.add_param_group({zeros({1})}, {.lr = -2}); }),
                     "[SGD] expected lr >= 0"));
  EXPECT_EQ(opt.num_groups(), 1u);
  // Options changed to a bad value are caught at the next step.
  opt.options(0).momentum = -1;
  EXPECT_TRUE(starts(value_error([&] { opt.step(Gradients()); }), "[SGD] expected momentum"));
}

TEST(Optim, TheLearningRateMayBePositionalAsInLibtorch) {
  Tensor w = zeros({2}).requires_grad_();
  EXPECT_EQ(optim::SGD({w}, 0.25).lr(0), 0.25);
  EXPECT_EQ(optim::Adam({w}, 1e-2).lr(0), 1e-2);
  EXPECT_EQ(optim::AdamW({w}, 1e-2).options(0).weight_decay, 1e-2);  // AdamW's default kept
  EXPECT_EQ(optim::RMSprop({w}, 0.5).lr(0), 0.5);
  EXPECT_EQ(optim::Adagrad({w}, 0.5).lr(0), 0.5);
  EXPECT_EQ(optim::Lion({w}, 0.5).lr(0), 0.5);
  EXPECT_TRUE(value_error([&] { optim::SGD({w}, -1.0); }).rfind("[SGD] expected lr", 0) == 0);
}

TEST(Optim, LoadStateDictRejectsMismatchedState) {
  Tensor w = zeros({2}).requires_grad_(), v = zeros({3}).requires_grad_();
  optim::Adam a({w}), b({v});
  Gradients g;
  g.set(w, ones({2}));
  a.step(g);
  std::string msg = value_error([&] { b.load_state_dict(a.state_dict()); });
  EXPECT_NE(msg.find("[Adam] expected state.0.exp_avg of shape [3]"), std::string::npos) << msg;
  EXPECT_NE(
      value_error([&] { b.load_state_dict(optim::State()); }).find("[Adam] expected 1 groups"),
      std::string::npos);
  for (const char* key : {"state.x.step", "state.5.step", "state.0.steps", "state."}) {
    optim::State bad = a.state_dict();
    bad.scalars[key] = 1;
    EXPECT_NE(value_error([&] { a.load_state_dict(bad); }).find(std::string("found key ") + key),
              std::string::npos)
        << key;
  }
  // A rejected state leaves the optimizer as it was.
  EXPECT_EQ(a.state(0, 0).step, 1);
}

TEST(Optim, ParamsWithoutGradientAreSkipped) {
  Tensor w = tensor({1.0, 2.0}).requires_grad_(), b = tensor({3.0}).requires_grad_();
  optim::SGD opt({w, b}, {.lr = 0.5, .momentum = 0.9});
  Gradients g;
  g.set(w, tensor({1.0, 1.0}));
  opt.step(g);
  EXPECT_EQ(w.to_vector<double>(), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{3.0}));
  EXPECT_EQ(opt.state(0, 1).step, 0);
  EXPECT_TRUE(opt.state(0, 1).buffers.empty());
}

TEST(Optim, StepsOnAccumulatedGradientsAndStaysOffTheGraph) {
  Tensor w = tensor({1.0, -1.0}).requires_grad_();
  Tensor x1 = tensor({2.0, 3.0}), x2 = tensor({1.0, 1.0});
  Gradients acc;
  (w * x1).sum().backward({.accumulate_into = &acc});
  (w * x2).sum().backward({.accumulate_into = &acc});
  optim::SGD opt({w}, {.lr = 0.1});
  opt.step(acc);
  auto got = w.to_vector<double>();
  EXPECT_NEAR(got[0], 1.0 - 0.1 * 3.0, 1e-15);
  EXPECT_NEAR(got[1], -1.0 - 0.1 * 4.0, 1e-15);
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());
  // The updated parameter still trains: a new backward reaches it.
  Gradients g = (w * w).sum().backward();
  EXPECT_NEAR(w.grad(g).to_vector<double>()[0], 2 * got[0], 1e-15);
}

// A two-layer model trained for a few steps with `train_step`, from the same start.
template <class Step>
std::vector<float> train_small_model(Step train_step, int steps) {
  manual_seed(3);
  nn::Sequential net(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 3));
  optim::Adam opt(net.parameters(), 0.01);
  Tensor x = randn({16, 4}), y = randint(3, {16});
  for (int i = 0; i < steps; ++i) train_step(net, opt, x, y);
  std::vector<float> out;
  for (const Tensor& p : net.parameters())
    for (float v : p.to_vector<float>()) out.push_back(v);
  return out;
}

TEST(Optim, TheLibtorchLoopTrainsAsTheEmberLoopDoes) {
  auto ember_style = [](nn::Sequential& net, optim::Adam& opt, const Tensor& x, const Tensor& y) {
    Gradients g = cross_entropy(net(x), y).backward();
    opt.step(g);
  };
  auto libtorch_style = [](nn::Sequential& net, optim::Adam& opt, const Tensor& x,
                           const Tensor& y) {
    opt.zero_grad();
    Tensor loss = cross_entropy(net.forward(x), y);
    loss.backward();
    opt.step();
  };
  std::vector<float> a = train_small_model(ember_style, 5);
  std::vector<float> b = train_small_model(libtorch_style, 5);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << i;
  // Module::zero_grad works like the optimizer's, and a forgotten zero_grad accumulates.
  auto accumulating = [](nn::Sequential& net, optim::Adam& opt, const Tensor& x,
                         const Tensor& y) {
    cross_entropy(net(x), y).backward();
    opt.step();
  };
  auto module_zero = [](nn::Sequential& net, optim::Adam& opt, const Tensor& x, const Tensor& y) {
    net.zero_grad();
    cross_entropy(net(x), y).backward();
    opt.step();
  };
  EXPECT_EQ(train_small_model(module_zero, 5), a);
  EXPECT_NE(train_small_model(accumulating, 5), a);
}

TEST(Optim, StepWithGradientsClearsTheSlotsAndZeroGradClearsThem) {
  Tensor w = tensor({1.0, 2.0}).requires_grad_(), b = tensor({3.0}).requires_grad_();
  optim::SGD opt({w, b}, {.lr = 0.5});
  Gradients g = (w * w).sum().backward();
  EXPECT_TRUE(w.grad().defined());  // backward fills the slot too (the same tensor)
  EXPECT_TRUE(w.grad().is_alias_of(w.grad(g)));
  opt.step(g);  // ember's form: the slots are cleared, so the next backward starts afresh
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(w.to_vector<double>(), (std::vector<double>{0.0, 0.0}));
  // libtorch's form: step() reads the slots and leaves them; zero_grad() clears them.
  (w + b * 2).sum().backward();
  opt.step();
  EXPECT_EQ(w.to_vector<double>(), (std::vector<double>{-0.5, -0.5}));
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1.0}));  // b's grad: 2 per element of w
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{1.0, 1.0}));
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{0.0, 0.0}));
  opt.zero_grad();
  EXPECT_FALSE(w.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  opt.step();  // no gradients: nothing moves
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1.0}));
}

TEST(Optim, NnUtilsClippingWorksOnTheSlots) {
  Tensor w = tensor({3.0, 4.0}).requires_grad_();
  (w * w).sum().backward();  // grad (6, 8): norm 10
  EXPECT_NEAR(nn::utils::clip_grad_norm_({w}, 5.0), 10.0, 1e-12);
  auto g = w.grad().to_vector<double>();
  EXPECT_NEAR(g[0], 3.0, 1e-5);
  EXPECT_NEAR(g[1], 4.0, 1e-5);
  nn::utils::clip_grad_value_({w}, 3.5);
  EXPECT_EQ(w.grad().to_vector<double>()[1], 3.5);
}

TEST(Optim, UpdatesKeepTheParamDtypeAndStateFollowsIt) {
  Tensor w = ones({3}, {.dtype = kF32}).requires_grad_();
  optim::AdamW opt({w}, {.lr = 0.01});
  Gradients g;
  g.set(w, full({3}, 0.5, {.dtype = kF32}));
  opt.step(g);
  EXPECT_EQ(w.dtype(), kF32);
  EXPECT_EQ(opt.state(0, 0).buffers.at("exp_avg").dtype(), kF32);
  EXPECT_EQ(opt.state(0, 0).buffers.at("exp_avg").device(), w.device());
  // AdamW's first step: decay then a unit Adam step of size lr.
  EXPECT_NEAR(w.to_vector<float>()[0], 1.0f * (1 - 0.01f * 0.01f) - 0.01f, 1e-6);
}

TEST(Optim, ClipGradNormScalesByTheTotalNorm) {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({1}).requires_grad_();
  Tensor c = zeros({1}).requires_grad_();  // no gradient: left out
  auto grads = [&] {
    Gradients g;
    g.set(a, tensor({3.0, 4.0}));
    g.set(b, tensor({-12.0}));
    return g;
  };
  Gradients g = grads();
  EXPECT_NEAR(optim::clip_grad_norm(g, {a, b, c}, 6.5), 13.0, 1e-12);
  EXPECT_NEAR(a.grad(g).to_vector<double>()[0], 1.5, 1e-6);
  EXPECT_NEAR(b.grad(g).to_vector<double>()[0], -6.0, 1e-6);
  g = grads();
  EXPECT_NEAR(optim::clip_grad_norm(g, {a, b}, 100.0), 13.0, 1e-12);
  EXPECT_EQ(a.grad(g).to_vector<double>()[1], 4.0);  // under the limit: unchanged
  g = grads();
  EXPECT_EQ(optim::clip_grad_norm(g, {a, b}, 6.0, optim::kInfNorm), 12.0);
  EXPECT_NEAR(b.grad(g).to_vector<double>()[0], -6.0, 1e-6);
  g = grads();
  EXPECT_NEAR(optim::clip_grad_norm(g, {a, b}, 1.0, 1.0), 19.0, 1e-12);
  EXPECT_NEAR(a.grad(g).to_vector<double>()[0], 3.0 / 19.0, 1e-6);
  Gradients empty;
  EXPECT_EQ(optim::clip_grad_norm(empty, {a}, 1.0), 0.0);
  EXPECT_NE(value_error([&] { optim::clip_grad_norm(g, {a}, -1.0); }).find("[clip_grad_norm]"),
            std::string::npos);
}

TEST(Optim, ClipGradValueClamps) {
  Tensor a = zeros({3}).requires_grad_();
  Gradients g;
  g.set(a, tensor({-3.0, 0.5, 2.0}));
  optim::clip_grad_value(g, {a}, 1.0);
  EXPECT_EQ(a.grad(g).to_vector<double>(), (std::vector<double>{-1.0, 0.5, 1.0}));
  EXPECT_NE(value_error([&] { optim::clip_grad_value(g, {a}, -1.0); }).find("[clip_grad_value]"),
            std::string::npos);
}

TEST(Optim, SchedulerErrorsNameTheScheduler) {
  Tensor w = zeros({1}).requires_grad_();
  optim::SGD opt({w}, {.lr = 0.1});
  EXPECT_EQ(value_error([&] { optim::StepLR(opt, 0); }).rfind("[StepLR] expected step_size > 0", 0),
            0u);
  EXPECT_EQ(value_error([&] { optim::LinearLR(opt, 0.0); }).rfind("[LinearLR]", 0), 0u);
  EXPECT_EQ(value_error([&] { optim::CosineAnnealingLR(opt, 0); }).rfind("[CosineAnnealingLR]", 0),
            0u);
  optim::OneCycleLR one(opt, {.max_lr = 1.0, .total_steps = 3});
  for (int i = 0; i < 3; ++i) one.step();
  EXPECT_EQ(value_error([&] { one.step(); }).rfind("[OneCycleLR] expected at most 3 steps", 0),
            0u);
  optim::Adagrad ada({zeros({1}).requires_grad_()});
  EXPECT_EQ(value_error([&] { optim::OneCycleLR(ada, {.max_lr = 1.0}); })
                .rfind("[OneCycleLR] expected an optimizer with momentum or betas", 0),
            0u);
  EXPECT_EQ(value_error([&] { ada.set_momentum(0, 0.9); }).rfind("[Adagrad]", 0), 0u);
  optim::OneCycleLR ada_cycle(ada, {.max_lr = 1.0, .cycle_momentum = false});
  EXPECT_NEAR(ada.lr(0), 1.0 / 25, 1e-15);
  auto s = std::make_shared<optim::ExponentialLR>(opt, 0.5);
  EXPECT_EQ(value_error([&] { optim::SequentialLR(opt, {s, s}, {}); }).rfind("[SequentialLR]", 0),
            0u);
  EXPECT_EQ(value_error([&] { optim::ChainedScheduler({}); }).rfind("[ChainedScheduler]", 0), 0u);
}

}  // namespace
}  // namespace ember

// libtorch habits (issue 13's open gaps): requires_grad as a creation option, kCPU/kCUDA,
// `->` on module values, Scalar's toFloat()..., GradScaler on the grad() slots, multinomial,
// Dropout2d, the positional losses; and torch 1.13 goldens for var_mean/std_mean and the
// positional pooling modules (tests/gen/gen_libtorch_habits.py writes
// tests/data/api/libtorch_habits.json), on every golden device.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <set>

#include "golden.h"

namespace ember::test {
namespace {

std::vector<float> vals(const Tensor& t) { return t.to_vector<float>(); }

TEST(LibtorchHabits, StatsAndPoolsMatchTorch) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/api/libtorch_habits.json");
  ASSERT_TRUE(f.good());
  const json data = json::parse(f);
  ASSERT_GE(data["cases"].size(), 28u);
  for (const GoldenDevice& gd : golden_devices()) {
    for (const json& c : data["cases"]) {
      const std::string kind = c["kind"];
      SCOPED_TRACE(c["name"].get<std::string>() + " on " + gd.name);
      const Tensor x = make_tensor(c["x"], gd.device);
      TensorList got;
      if (kind == "var_mean" || kind == "std_mean") {
        const double corr = c["correction"].get<double>();
        const bool keep = c["keepdim"].get<bool>();
        std::tuple<Tensor, Tensor> r;
        if (c["dims"].is_null())
          r = kind == "var_mean" ? var_mean(x) : std_mean(x);
        else if (c["dims"].size() == 1)  // the one-integer-dim form: var_mean(x, 1)
          r = kind == "var_mean" ? var_mean(x, c["dims"][0].get<int64_t>(), corr, keep)
                                 : std_mean(x, c["dims"][0].get<int64_t>(), corr, keep);
        else
          r = kind == "var_mean" ? var_mean(x, ints(c, "dims"), corr, keep)
                                 : std_mean(x, ints(c, "dims"), corr, keep);
        got = {std::get<0>(r), std::get<1>(r)};
      } else {
        const int64_t k = c["kernel"], p = c["padding"];
        const bool positional_one = c["stride"].is_null();  // nn::MaxPool2d(2)
        const int64_t s = positional_one ? k : c["stride"].get<int64_t>();
        std::unique_ptr<nn::Module> m;
        if (kind == "max_pool2d")
          m = positional_one ? std::make_unique<nn::MaxPool2d>(k)
                             : std::make_unique<nn::MaxPool2d>(k, s, p);
        else if (kind == "avg_pool2d")
          m = positional_one ? std::make_unique<nn::AvgPool2d>(k)
                             : std::make_unique<nn::AvgPool2d>(k, s, p);
        else if (kind == "max_pool1d")
          m = positional_one ? std::make_unique<nn::MaxPool1d>(k)
                             : std::make_unique<nn::MaxPool1d>(k, s, p);
        else
          m = positional_one ? std::make_unique<nn::AvgPool1d>(k)
                             : std::make_unique<nn::AvgPool1d>(k, s, p);
        got = {(*m)(x)};
      }
      ASSERT_EQ(got.size(), c["out"].size());
      const double tol = c["x"]["dtype"] == "float64" ? 1e-12 : 1e-5;
      for (size_t i = 0; i < got.size(); ++i) {
        const std::string err = compare(got[i], c["out"][i], tol, tol);
        EXPECT_TRUE(err.empty()) << "output " << i << ": " << err;
      }
    }
  }
}

// --- requires_grad as a creation option ---

TEST(LibtorchHabits, RequiresGradOptionMakesALeafWhoseGradientArrives) {
  Tensor w = zeros({2, 3}, TensorOptions().dtype(kFloat32).requires_grad(true));
  Tensor v = randn({3}, requires_grad());
  Tensor b = tensor({1.0, 2.0}, requires_grad());
  EXPECT_TRUE(w.requires_grad() && w.is_leaf());
  EXPECT_TRUE(v.requires_grad() && b.requires_grad());
  EXPECT_EQ(w.dtype(), kF32);
  Tensor y = (w.matmul(v) * b).sum();
  y.backward();
  ASSERT_TRUE(w.grad().defined() && v.grad().defined() && b.grad().defined());
  // d/dw_ij = b_i v_j; d/dv = w^T b = 0; d/db = w v = 0.
  const auto gv = vals(v), gw = vals(w.grad());
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_FLOAT_EQ(gw[size_t(i * 3 + j)], float(i + 1) * gv[size_t(j)]);
  EXPECT_EQ(vals(v.grad()), std::vector<float>(3, 0.f));
}

TEST(LibtorchHabits, EveryCreationOpTakesRequiresGrad) {
  const Tensor like = ones({2});
  const std::vector<Tensor> made = {
      empty({2}, requires_grad()),          ones({2}, {.requires_grad = true}),
      full({2}, 3.0, requires_grad()),      arange(0.0, 2.0, 1.0, requires_grad()),
      linspace(0, 1, 2, requires_grad()),   eye(2, {}, requires_grad()),
      zeros_like(like, requires_grad()),    ones_like(like, requires_grad()),
      full_like(like, 2, requires_grad()),  empty_like(like, requires_grad()),
      rand({2}, requires_grad()),           normal(0, 1, {2}, requires_grad()),
      uniform(0, 1, {2}, requires_grad()),  rand_like(like, requires_grad()),
      randn_like(like, requires_grad()),    randn({2}, Generator(1), requires_grad()),
      ones({2}, dtype(kF64).requires_grad(true))};
  for (const Tensor& t : made) {
    EXPECT_TRUE(t.requires_grad());
    EXPECT_TRUE(t.is_leaf());
    EXPECT_TRUE(t.device().has_autodiff());
  }
  EXPECT_EQ(made.back().dtype(), kF64);
  // requires_grad(false) and no option leave plain tensors; options() does not carry it.
  EXPECT_FALSE(ones({2}, requires_grad(false)).requires_grad());
  EXPECT_FALSE(zeros({2}, made[0].options()).requires_grad());
  // The libtorch setters on an existing tensor.
  Tensor x = ones({2});
  x.set_requires_grad(true);
  (x * x).sum().backward();
  EXPECT_EQ(vals(x.grad()), std::vector<float>({2.f, 2.f}));
}

TEST(LibtorchHabits, TensorOptionsBuilderKeepsTheOtherFields) {
  const TensorOptions o = TensorOptions().device(Device::cpu()).dtype(kF64).requires_grad(true);
  EXPECT_EQ(o.dtype(), kF64);
  EXPECT_EQ(o.device(), Device::cpu());
  EXPECT_TRUE(o.requires_grad());
  const TensorOptions p = o.dtype(kF16);  // a copy: o stays as it was
  EXPECT_EQ(o.dtype.value(), kF64);
  EXPECT_EQ(p.dtype(), kF16);
  EXPECT_TRUE(p.device.has_value() && p.requires_grad());
  // Unset fields read as the defaults; ember's own spelling still works beside the builder.
  EXPECT_EQ(TensorOptions().dtype(), default_dtype());
  EXPECT_EQ(TensorOptions().device(), default_device());
  const TensorOptions q{.dtype = kI32};
  EXPECT_EQ(q.dtype.value_or(kF32), kI32);
  EXPECT_FALSE(q.device.has_value());
  Tensor t = zeros({2}, TensorOptions().dtype(kF64).device(Device::cpu()).requires_grad(true));
  EXPECT_EQ(t.dtype(), kF64);
  EXPECT_TRUE(t.device().same_place(Device::cpu()));
  (t * 3).sum().backward();
  EXPECT_EQ(t.grad().to_vector<double>(), std::vector<double>({3, 3}));
  EXPECT_EQ(t.options().dtype(), kF64);
}

// --- kCPU / kCUDA ---

TEST(LibtorchHabits, DeviceTypes) {
  EXPECT_EQ(Device(kCPU), default_device());
  {
    DeviceGuard guard(Device::cpu());
    EXPECT_EQ(Device(kCPU), Device::cpu());  // kCPU follows a host default
  }
  EXPECT_TRUE(Device(kCPU).is_cpu());
  EXPECT_TRUE(Device::cpu().is_cpu() && Device::flex().is_cpu());
  EXPECT_EQ(Device::cpu().type(), kCPU);
  EXPECT_EQ(Device::flex().type(), DeviceType::Cpu);
  EXPECT_FALSE(Device::cpu().is_cuda());
  EXPECT_THROW(Device(kCPU, 1), ValueError);
  Tensor t = ones({2});
  EXPECT_TRUE(t.is_cpu() && !t.is_cuda() && t.device().is_cpu());
  EXPECT_TRUE(t.to(kCPU).is_alias_of(t));
  EXPECT_TRUE(t.cpu().is_alias_of(t));
  EXPECT_TRUE(zeros({2}, kCPU).is_cpu());
  if (!cuda::is_available()) {
    EXPECT_THROW(Device(kCUDA, 0), DeviceError);
    EXPECT_THROW((void)t.to(kCUDA), DeviceError);
  } else {
    EXPECT_EQ(Device(kCUDA, 0), Device::cuda(0));
    EXPECT_EQ(Device(kCUDA), Device::cuda(0));
    Tensor g = t.to(kCUDA);
    EXPECT_TRUE(g.is_cuda() && g.device().is_cuda() && !g.is_cpu());
    EXPECT_EQ(g.device().type(), kCUDA);
    EXPECT_TRUE(g.to(kCPU).is_cpu());
    EXPECT_EQ(vals(g.cpu()), vals(t));
  }
}

// --- `->` on module values ---

struct ArrowNet : nn::Module {
  nn::Linear fc{3, 2};
  ArrowNet() { register_module("fc", fc); }
  Tensor forward(const Tensor& x) override { return fc->forward(x); }
};

TEST(LibtorchHabits, ArrowOnModuleValues) {
  nn::Linear fc(3, 2);
  EXPECT_TRUE(fc->weight.is_alias_of(fc.weight));
  EXPECT_EQ(fc->weight.shape(), Shape({2, 3}));
  const Tensor x = ones({4, 3});
  EXPECT_TRUE(equal(fc->forward(x), fc(x)));
  ArrowNet net;
  EXPECT_EQ(net->parameters().size(), 2u);
  EXPECT_EQ(net->forward(x).shape(), Shape({4, 2}));
  net->eval();
  EXPECT_FALSE(net.is_training());
  const ArrowNet& cnet = net;
  EXPECT_EQ(cnet->named_parameters()[0].first, "fc.weight");
  // A std::shared_ptr's `->` is the pointer's, as before.
  auto shared = std::make_shared<ArrowNet>();
  EXPECT_EQ(shared->fc->weight.shape(), Shape({2, 3}));
  EXPECT_EQ(shared->parameters().size(), 2u);
  nn::LSTM lstm(4, 5, 2);
  auto [out, hc] = lstm->forward(ones({3, 1, 4}), {});
  EXPECT_EQ(out.shape(), Shape({3, 1, 5}));
  EXPECT_EQ(std::get<1>(hc).shape(), Shape({2, 1, 5}));
  auto [out2, hc2] = lstm->forward(ones({3, 1, 4}), hc);
  EXPECT_EQ(out2.shape(), Shape({3, 1, 5}));
}

// --- Scalar's libtorch names ---

TEST(LibtorchHabits, ScalarConversions) {
  const Scalar f = tensor({2.75}).item();
  EXPECT_FLOAT_EQ(f.toFloat(), 2.75f);
  EXPECT_DOUBLE_EQ(f.toDouble(), 2.75);
  EXPECT_EQ(f.toLong(), 2);
  EXPECT_EQ(f.toInt(), 2);
  EXPECT_TRUE(f.toBool());
  EXPECT_TRUE(f.isFloatingPoint() && !f.isIntegral(true) && !f.isComplex());
  const Scalar i = tensor({7}).item();
  EXPECT_EQ(i.toLong(), 7);
  EXPECT_FLOAT_EQ(i.toFloat(), 7.f);
  EXPECT_TRUE(i.isIntegral(false));
  const Scalar b = Scalar(false);
  EXPECT_FALSE(b.toBool());
  EXPECT_TRUE(b.isBoolean() && b.isIntegral(true) && !b.isIntegral(false));
  EXPECT_FLOAT_EQ(ones({1}).sum().item().toFloat(), 1.f);
}

// --- GradScaler on the grad() slots ---

TEST(LibtorchHabits, GradScalerOnGradSlots) {
  Tensor w = tensor({1.f, 2.f}).requires_grad_();
  optim::SGD opt({w}, {.lr = 0.5});
  amp::GradScaler scaler({.init_scale = 1024, .growth_interval = 1});
  opt.zero_grad();
  Tensor loss = (w * tensor({3.f, 4.f})).sum();
  scaler.scale(loss).backward();
  EXPECT_EQ(vals(w.grad()), std::vector<float>({3072.f, 4096.f}));
  scaler.unscale_(opt);
  EXPECT_EQ(vals(w.grad()), std::vector<float>({3.f, 4.f}));
  EXPECT_THROW(scaler.unscale_(opt), ValueError);  // twice in one step
  EXPECT_NEAR(nn::utils::clip_grad_norm_({w}, 100.0), 5.0, 1e-6);  // sees the unscaled grads
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(vals(w), std::vector<float>({-0.5f, 0.f}));
  EXPECT_EQ(scaler.get_scale(), 2048);  // grown after growth_interval finite steps

  // A step whose gradients hold inf is skipped (step() unscales when unscale_ was not called)
  // and the scale backs off; the parameters keep their values.
  opt.zero_grad();
  Tensor bad = (w * tensor({INFINITY, 1.f})).sum();
  scaler.scale(bad).backward();
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(vals(w), std::vector<float>({-0.5f, 0.f}));
  EXPECT_EQ(scaler.get_scale(), 1024);
  EXPECT_EQ(scaler.skipped_steps(), 1);

  // Without unscale_, step() unscales the slots itself.
  opt.zero_grad();
  scaler.scale((w * 2).sum()).backward();
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(vals(w), std::vector<float>({-1.5f, -1.f}));
}

TEST(LibtorchHabits, DisabledGradScalerStepsPlainly) {
  Tensor w = tensor({1.f}).requires_grad_();
  optim::SGD opt({w}, {.lr = 1});
  amp::GradScaler scaler({.enabled = false});
  scaler.scale(w.sum() * 2).backward();
  scaler.unscale_(opt);
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(vals(w), std::vector<float>({-1.f}));
}

// --- multinomial, Dropout2d, the positional losses, dtype shorthands for random ops ---

TEST(LibtorchHabits, Multinomial) {
  const Tensor p = tensor({0.1f, 0.0f, 0.2f, 0.7f});
  Generator gen(3);
  const Tensor draw = multinomial(p, 3, /*replacement=*/false, gen);
  EXPECT_EQ(draw.dtype(), kI64);
  EXPECT_EQ(draw.shape(), Shape({3}));
  const auto d = draw.to_vector<int64_t>();
  EXPECT_EQ(std::set<int64_t>(d.begin(), d.end()), std::set<int64_t>({0, 2, 3}));  // never 1
  EXPECT_TRUE(equal(multinomial(p, 3, false, Generator(3)), draw));  // same seed, same draw
  const auto many = multinomial(p * 10, 4000, /*replacement=*/true, gen).to_vector<int64_t>();
  std::vector<double> freq(4, 0);
  for (int64_t i : many) freq[size_t(i)] += 1.0 / 4000;
  EXPECT_NEAR(freq[0], 0.1, 0.03);
  EXPECT_EQ(freq[1], 0);
  EXPECT_NEAR(freq[2], 0.2, 0.03);
  EXPECT_NEAR(freq[3], 0.7, 0.03);
  EXPECT_EQ(multinomial(ones({2, 5}), 4).shape(), Shape({2, 4}));
  EXPECT_EQ(multinomial(ones({2, 5}), 7, true).shape(), Shape({2, 7}));
  EXPECT_THROW(multinomial(p, 5), ValueError);  // more than 4 without replacement
  EXPECT_THROW(multinomial(ones({2, 2, 2}), 1), ValueError);
  EXPECT_THROW(multinomial(tensor({1, 2}), 1), DTypeError);
}

TEST(LibtorchHabits, Dropout2dDropsWholeChannels) {
  manual_seed(5);
  nn::Dropout2d drop(0.5);
  const Tensor x = ones({4, 8, 3, 3});
  const Tensor y = drop->forward(x);
  const auto v = vals(y);
  int dropped = 0;
  for (size_t c = 0; c < 32; ++c) {
    const float first = v[c * 9];
    EXPECT_TRUE(first == 0.f || first == 2.f);
    dropped += first == 0.f;
    for (size_t k = 1; k < 9; ++k) EXPECT_EQ(v[c * 9 + k], first);
  }
  EXPECT_GT(dropped, 4);
  EXPECT_LT(dropped, 28);
  drop.eval();
  EXPECT_TRUE(equal(drop(x), x));
  EXPECT_EQ(drop.repr(), "Dropout2d(p=0.5, inplace=False)");
  EXPECT_EQ(nn::functional::dropout2d(ones({3, 2, 2}), 0.5, true).shape(), Shape({3, 2, 2}));
  EXPECT_THROW(nn::functional::dropout2d(ones({3, 2}), 0.5, true), ShapeError);
  EXPECT_EQ(nn::Dropout3d(0.2)(ones({1, 2, 2, 2, 2})).shape(), Shape({1, 2, 2, 2, 2}));
  // Gradients flow through the kept channels, scaled like the values.
  Tensor z = ones({1, 4, 2, 2}).requires_grad_();
  nn::Dropout2d half(0.5);
  const Tensor out = half(z);
  out.sum().backward();
  EXPECT_EQ(vals(z.grad()), vals(out));
}

TEST(LibtorchHabits, PositionalLossesAndRandomShorthands) {
  manual_seed(0);
  const Tensor logits = randn({4, 3});
  const Tensor target = randint(0, 3, {4}, kLong);
  EXPECT_EQ(target.dtype(), kI64);
  const Tensor logp = log_softmax(logits, 1);
  EXPECT_TRUE(allclose(nll_loss(logp, target, {}, Reduction::Sum),
                       nll_loss(logp, target, {.reduction = "sum"})));
  EXPECT_TRUE(allclose(cross_entropy(logits, target, {}, Reduction::Mean, -100, 0.1),
                       cross_entropy(logits, target, {.label_smoothing = 0.1})));
  EXPECT_EQ(nll_loss(logp, target, {}, Reduction::None).shape(), Shape({4}));
  EXPECT_EQ(rand({2}, kF64).dtype(), kF64);
  EXPECT_EQ(randn({2}, kF64).dtype(), kF64);
  EXPECT_EQ(randint(5, {2}, kI32).dtype(), kI32);
  EXPECT_TRUE(randn({2}, Device::cpu()).device().same_place(Device::cpu()));
}

TEST(LibtorchHabits, NestedTensorLists) {
  const Tensor a = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(a.dtype(), kI64);
  EXPECT_EQ(a.shape(), Shape({2, 3}));
  EXPECT_EQ(a.to_vector<int64_t>(), std::vector<int64_t>({1, 2, 3, 4, 5, 6}));
  const Tensor b = tensor({{{1.f}, {2.f}}, {{3.f}, {4.f}}});
  EXPECT_EQ(b.shape(), Shape({2, 2, 1}));
  EXPECT_EQ(vals(b), std::vector<float>({1, 2, 3, 4}));
  EXPECT_EQ(tensor({{1.0, 2.0}}, kF32).dtype(), kF32);
  Tensor w = tensor({{1.0, 2.0}, {3.0, 4.0}}, requires_grad());
  (w * w).sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), std::vector<double>({2, 4, 6, 8}));
  EXPECT_THROW(tensor({{1, 2}, {3}}), ShapeError);
  EXPECT_THROW(tensor({{{1}, {2}}, {{3}}}), ShapeError);
}

TEST(LibtorchHabits, GradModeAndCudaSeeds) {
  EXPECT_TRUE(GradMode::is_enabled());
  {
    AutoGradMode off(false);
    EXPECT_FALSE(GradMode::is_enabled());
    Tensor x = ones({2}).requires_grad_();
    EXPECT_FALSE((x * 2).requires_grad());
    {
      AutoGradMode on(true);
      EXPECT_TRUE((x * 2).requires_grad());
    }
  }
  EXPECT_TRUE(grad_enabled());
  GradMode::set_enabled(false);
  EXPECT_FALSE(grad_enabled());
  GradMode::set_enabled(true);
  cuda::manual_seed(1);  // no-ops without a GPU
  cuda::manual_seed_all(1);
  nn::MultiheadAttention mha(8, 2);
  EXPECT_EQ(mha.options.num_heads, 2);
  EXPECT_EQ(mha->forward(ones({3, 1, 8})).shape(), Shape({3, 1, 8}));
}

}  // namespace
}  // namespace ember::test

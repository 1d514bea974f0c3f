// Mixed precision as a device policy on the host backends (flex computes f16/bf16 through f32):
// which ops run in which dtype, f32 master weights and gradients, the loss scaler, the Learner
// with an f16 device and its checkpoints, and the errors. The GPU side is tests/cuda/amp_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "ember/amp.h"
#include "ember/ember.h"
#include "ember/ops/registry.h"
#include "ember/store/state.h"
#include "ember/train/learner.h"
#include "store/store_test_util.h"
#include "train/synthetic.h"

namespace ember {
namespace {
namespace F = nn::functional;

std::vector<Device> host_devices() { return {Device::flex(), Device::cpu()}; }

TEST(MixedPrecision, OpsRunInTheirListedDtypes) {
  for (Device base : host_devices()) {
    for (DType low : {kBF16, kF16}) {
      const Device d = base.mixed_precision(low);
      manual_seed(0);
      Tensor x = randn({4, 8}).to(d), w = randn({6, 8}).to(d), b = randn({6}).to(d);
      SCOPED_TRACE(d.str());
      // The autocast list: products and convolutions in the compute dtype.
      Tensor y = linear(x, w, b);
      EXPECT_EQ(y.dtype(), low);
      EXPECT_EQ(matmul(x, w.t()).dtype(), low);
      EXPECT_EQ(bmm(x.reshape({2, 2, 8}), w.t().reshape({2, 8, 3})).dtype(), low);
      Tensor img = randn({1, 2, 5, 5}).to(d), k = randn({3, 2, 3, 3}).to(d);
      EXPECT_EQ(conv2d(img, k).dtype(), low);
      Tensor q = randn({1, 2, 4, 8}).to(d);
      EXPECT_EQ(scaled_dot_product_attention(q, q, q).dtype(), low);
      // The same values as in f32, up to the compute dtype's rounding.
      Tensor ref = linear(x.to(Device::flex()), w.to(Device::flex()), b.to(Device::flex()));
      EXPECT_TRUE(allclose(y.to(Device::flex()).to(kF32), ref, 3e-2, 3e-2));
      // The f32 list: sensitive ops take the low-precision outputs back to f32.
      EXPECT_EQ(softmax(y, 1).dtype(), kF32);
      EXPECT_EQ(log_softmax(y, 1).dtype(), kF32);
      EXPECT_EQ(layer_norm(y, Shape{6}).dtype(), kF32);
      EXPECT_EQ(sum(y).dtype(), kF32);
      EXPECT_EQ(mean(y).dtype(), kF32);
      EXPECT_EQ(exp(y).dtype(), kF32);
      EXPECT_EQ(log(abs(y) + 1).dtype(), kF32);
      EXPECT_EQ(F::cross_entropy(y, tensor<int64_t>({0, 1, 2, 3}).to(d)).dtype(), kF32);
      EXPECT_EQ(F::mse_loss(y, zeros({4, 6}).to(d)).dtype(), kF32);
      // Everything else keeps its inputs' dtypes (binary ops promote as always).
      EXPECT_EQ(relu(y).dtype(), low);
      EXPECT_EQ(relu(x).dtype(), kF32);
      EXPECT_EQ((y + b).dtype(), kF32);
      EXPECT_EQ((y * 2.0).dtype(), low);
      EXPECT_EQ(y.reshape({-1}).dtype(), low);
      // float64 and integers are left alone, as torch's autocast does.
      Tensor xd = x.to(kF64);
      EXPECT_EQ(matmul(xd, xd.t()).dtype(), kF64);
      Tensor i = tensor<int64_t>({1, 2, 3}).to(d);
      EXPECT_EQ(sum(i).dtype(), kI64);
    }
  }
}

TEST(MixedPrecision, PolicyTableAndAutocastOff) {
  EXPECT_EQ(amp::op_policy("linear"), amp::OpPolicy::lower);
  EXPECT_EQ(amp::op_policy("conv2d"), amp::OpPolicy::lower);
  EXPECT_EQ(amp::op_policy("scaled_dot_product_attention"), amp::OpPolicy::lower);
  EXPECT_EQ(amp::op_policy("softmax"), amp::OpPolicy::f32);
  EXPECT_EQ(amp::op_policy("layer_norm"), amp::OpPolicy::f32);
  EXPECT_EQ(amp::op_policy("sum"), amp::OpPolicy::f32);
  EXPECT_EQ(amp::op_policy("relu"), amp::OpPolicy::keep);
  EXPECT_EQ(amp::op_policy("cast"), amp::OpPolicy::keep);
  EXPECT_THROW(amp::op_policy("no_such_op"), ValueError);

  const Device d = Device::flex().mixed_precision(kBF16);
  Tensor x = ones({2, 3}).to(d), w = ones({4, 3}).to(d);
  EXPECT_TRUE(amp::autocast_enabled());
  {
    amp::AutocastOff off;
    EXPECT_FALSE(amp::autocast_enabled());
    EXPECT_EQ(linear(x, w).dtype(), kF32);
  }
  EXPECT_TRUE(amp::autocast_enabled());
  EXPECT_EQ(linear(x, w).dtype(), kBF16);
  // An explicit dtype is kept (torch's fp32_set_opt_dtype ops).
  EXPECT_EQ(sum(linear(x, w), {}, false, kF64).dtype(), kF64);
}

TEST(MixedPrecision, DeviceComposition) {
  const Device a = Device::cpu().autodiff().mixed_precision(kBF16);
  const Device b = Device::cpu().mixed_precision(kBF16).autodiff();
  EXPECT_EQ(a, b) << a << " vs " << b;  // the policy is outermost either way
  ASSERT_FALSE(a.layers().empty());
  EXPECT_STREQ(a.layers()[0]->name(), "mixed_precision(bfloat16)");
  EXPECT_TRUE(a.has_autodiff());
  EXPECT_NE(a.str().find("+mixed_precision(bfloat16)"), std::string::npos) << a;
  EXPECT_EQ(amp::compute_dtype(a), kBF16);
  EXPECT_EQ(amp::compute_dtype(Device::cpu()), std::nullopt);
  // A second call replaces the first.
  const Device h = a.mixed_precision(kF16);
  EXPECT_EQ(amp::compute_dtype(h), kF16);
  int policies = 0;
  for (Layer* l : h.layers()) policies += std::string(l->name()).rfind("mixed_precision", 0) == 0;
  EXPECT_EQ(policies, 1);
  // requires_grad_ on a policy device without autodiff puts autodiff below the policy.
  Tensor p = ones({2}).to(Device::flex().mixed_precision(kBF16)).requires_grad_();
  EXPECT_EQ(p.device(), Device::flex().autodiff().mixed_precision(kBF16));
  // An op mixing a policy tensor and a plain one runs under the policy.
  Tensor plain = ones({3, 2}).to(Device::cpu());
  EXPECT_EQ(matmul(plain, ones({2, 2}).to(a.without_layers().mixed_precision(kBF16))).dtype(),
            kBF16);
}

TEST(MixedPrecision, RefusesOtherDtypes) {
  for (DType bad : {kF32, kF64, kI32, kBool}) {
    try {
      Device::flex().mixed_precision(bad);
      FAIL() << dtype_name(bad) << " was accepted";
    } catch (const ValueError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("[mixed_precision]"), std::string::npos) << what;
      EXPECT_NE(what.find("bfloat16 or float16"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string(dtype_name(bad))), std::string::npos) << what;
    }
  }
}

struct Mlp : nn::Module {
  nn::Linear fc1{{.in = 8, .out = 32}}, fc2{{.in = 32, .out = 4}};
  Mlp() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override { return fc2(relu(fc1(x))); }
};

TEST(MixedPrecision, MasterWeightsAndGradientsStayF32) {
  for (Device base : host_devices()) {
    for (DType low : {kBF16, kF16}) {
      SCOPED_TRACE(base.str() + " " + std::string(dtype_name(low)));
      manual_seed(1);
      Mlp ref;
      Mlp net;
      net.load_state_dict(ref.state_dict());
      const Device d = base.autodiff().mixed_precision(low);
      net.to(d);
      manual_seed(2);
      Tensor x = randn({16, 8}), y = randint(0, 4, {16});
      Tensor logits = net(x.to(d));
      EXPECT_EQ(logits.dtype(), low);
      Tensor loss = F::cross_entropy(logits, y.to(d));
      EXPECT_EQ(loss.dtype(), kF32);
      Gradients g = loss.backward();
      Gradients gr = F::cross_entropy(ref(x), y).backward();
      auto params = net.parameters(), rparams = ref.parameters();
      for (size_t i = 0; i < params.size(); ++i) {
        EXPECT_EQ(params[i].dtype(), kF32);
        Tensor gi = g.get(params[i]);
        ASSERT_TRUE(gi.defined()) << i;
        EXPECT_EQ(gi.dtype(), kF32) << i;
        EXPECT_EQ(gi.shape(), params[i].shape()) << i;
        EXPECT_TRUE(allclose(gi.to(Device::flex()), gr.get(rparams[i]), 5e-2, 1e-2)) << i;
      }
      optim::Adam opt(params, {.lr = 1e-2});
      opt.step(g);
      for (const auto& [k, t] : net.state_dict()) EXPECT_EQ(t.dtype(), kF32) << k;
    }
  }
}

TEST(GradScaler, GrowsAfterTheIntervalAndBacksOffOnInf) {
  Tensor p = ones({3}).requires_grad_();
  optim::SGD opt({p}, {.lr = 0.5});
  amp::GradScaler s({.init_scale = 8, .growth_factor = 2, .backoff_factor = 0.25,
                     .growth_interval = 3});
  EXPECT_EQ(s.get_scale(), 8);
  EXPECT_EQ(s.scale(tensor<float>({1.5f})).to_vector<float>()[0], 12.f);
  auto step_with = [&](std::vector<float> grad) {
    Gradients g;
    g.set(p, tensor<float>(grad, {3}) * s.get_scale());  // what backward of a scaled loss gives
    const bool stepped = s.step(opt, g);
    s.update();
    return stepped;
  };
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(step_with({1, 1, 1}));
  EXPECT_EQ(s.get_scale(), 8);
  EXPECT_EQ(s.growth_tracker(), 2);
  EXPECT_TRUE(step_with({1, 1, 1}));
  EXPECT_EQ(s.get_scale(), 16);  // grown after 3 finite steps
  EXPECT_EQ(s.growth_tracker(), 0);
  // The unscaled gradient reached the optimizer: three steps of lr 0.5 * 1.
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{-0.5f, -0.5f, -0.5f}));
  EXPECT_TRUE(step_with({1, 1, 1}));
  EXPECT_FALSE(step_with({1, INFINITY, 1}));
  EXPECT_EQ(s.get_scale(), 4);  // backed off
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_FALSE(step_with({NAN, 1, 1}));
  EXPECT_EQ(s.get_scale(), 1);
  EXPECT_EQ(s.skipped_steps(), 2);
  // The skipped steps left the parameter alone.
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{-1.f, -1.f, -1.f}));
}

TEST(GradScaler, SkipsStepsWhereF16Overflows) {
  // A scale of 2^40 overflows f16 in the backward pass of an f16 network: those steps are
  // skipped (the weights and Adam's step count do not move) until the scale has come down.
  manual_seed(3);
  Mlp net;
  const Device d = Device::flex().autodiff().mixed_precision(kF16);
  net.to(d);
  const auto before = net.fc1.weight.to(Device::flex()).clone();
  optim::Adam opt(net.parameters(), {.lr = 1e-2});
  amp::GradScaler s({.init_scale = std::ldexp(1.0, 40), .backoff_factor = 1.0 / 1024});
  Tensor x = randn({16, 8}).to(d), y = randint(0, 4, {16}).to(d);
  Gradients g = s.scale(F::cross_entropy(net(x), y)).backward();
  EXPECT_FALSE(s.step(opt, g));
  s.update();
  EXPECT_TRUE(equal(net.fc1.weight.to(Device::flex()), before));
  EXPECT_EQ(s.get_scale(), std::ldexp(1.0, 30));
  int steps = 0;
  while (steps < 6) {
    g = s.scale(F::cross_entropy(net(x), y)).backward();
    const bool ok = s.step(opt, g);
    s.update();
    if (ok) break;
    ++steps;
  }
  EXPECT_LE(s.get_scale(), 65536.0);
  EXPECT_FALSE(equal(net.fc1.weight.to(Device::flex()), before));
  EXPECT_EQ(opt.state(0, 0).step, 1);
  EXPECT_TRUE(all(isfinite(net.fc1.weight)).item<bool>());
}

TEST(GradScaler, StateAndErrors) {
  amp::GradScaler s({.init_scale = 1024, .growth_interval = 5});
  Tensor p = ones({2}).requires_grad_();
  optim::SGD opt({p}, {.lr = 0.1});
  EXPECT_THROW(s.update(), ValueError);  // no step yet
  Gradients g;
  g.set(p, ones({2}));
  s.unscale(g, {p});
  EXPECT_THROW(s.unscale(g, {p}), ValueError);  // twice in one step
  EXPECT_TRUE(s.step(opt, g));
  s.update();
  auto st = s.state_dict();
  EXPECT_EQ(st.scalars.at("scale"), 1024);
  EXPECT_EQ(st.scalars.at("growth_tracker"), 1);
  amp::GradScaler t({.growth_interval = 5});
  t.load_state_dict(st);
  EXPECT_EQ(t.get_scale(), 1024);
  EXPECT_EQ(t.growth_tracker(), 1);
  auto bad = st;
  bad.scalars["scale"] = -1;
  EXPECT_THROW(t.load_state_dict(bad), ValueError);
  bad = st;
  bad.scalars["growth_tracker"] = 5;
  EXPECT_THROW(t.load_state_dict(bad), ValueError);
  EXPECT_EQ(t.get_scale(), 1024);  // unchanged by the refused loads
  EXPECT_THROW(amp::GradScaler({.init_scale = 0}), ValueError);
  EXPECT_THROW(amp::GradScaler({.init_scale = INFINITY}), ValueError);
  EXPECT_THROW(amp::GradScaler({.growth_factor = 1}), ValueError);
  EXPECT_THROW(amp::GradScaler({.backoff_factor = 1}), ValueError);
  EXPECT_THROW(amp::GradScaler({.growth_interval = 0}), ValueError);
  // Disabled: scale 1, every step taken.
  amp::GradScaler off({.enabled = false});
  Tensor l = tensor<float>({3.f});
  EXPECT_EQ(off.scale(l).to_vector<float>()[0], 3.f);
  Gradients g2;
  g2.set(p, tensor<float>({INFINITY, 1.f}));
  EXPECT_TRUE(off.step(opt, g2));
  off.update();
}

// The blob task of the Learner's tests, with the model on a mixed-precision device.
struct AmpRun {
  data::DatasetPtr<data::Example> train = test::blobs(256, 4, 8, 11);
  data::DataLoader<data::Example> loader{train, {.batch_size = 16, .shuffle = true, .seed = 3}};
  std::unique_ptr<test::BlobNet> net;
  std::unique_ptr<optim::Adam> opt;
  std::unique_ptr<train::Learner> learner;
  AmpRun(Device d, train::LearnerOptions o) {
    manual_seed(5);
    net = std::make_unique<test::BlobNet>(8, 4, 0.0);
    net->to(d);
    opt = std::make_unique<optim::Adam>(net->parameters(), optim::AdamOptions{.lr = 1e-2});
    o.renderer = train::silent_renderer();
    learner = std::make_unique<train::Learner>(*net, *opt, std::move(o));
  }
  double fit() {
    auto r = learner->fit(loader, train::classification_step(*net));
    return r.history.back().train[0].second;
  }
};

TEST(MixedPrecision, LearnerTrainsToTheF32Loss) {
  const double f32 = AmpRun(Device::cpu().autodiff(), {.epochs = 3}).fit();
  for (DType low : {kBF16, kF16}) {
    AmpRun r(Device::cpu().autodiff().mixed_precision(low), {.epochs = 3});
    const double loss = r.fit();
    EXPECT_NEAR(loss, f32, 0.05 + 0.1 * f32) << dtype_name(low);
    for (const auto& p : r.net->parameters()) EXPECT_EQ(p.dtype(), kF32);
  }
}

TEST(MixedPrecision, LearnerScalesF16AndCheckpointsTheScale) {
  const Device d = Device::flex().autodiff().mixed_precision(kF16);
  const train::LearnerOptions base{.grad_scaler = amp::GradScalerOptions{.growth_interval = 4}};
  auto run = [&](const std::string& dir, int64_t epochs) {
    train::LearnerOptions o = base;
    o.epochs = epochs;
    o.checkpoint_dir = dir;
    AmpRun r(d, o);
    r.fit();
    for (const auto& p : r.net->parameters()) EXPECT_EQ(p.dtype(), kF32);
    return store::load_state(train::Learner::latest_checkpoint(dir));
  };
  // Two epochs at once, and one epoch then a resumed second: the same scale and tracker, and
  // the same weights (f32 in the checkpoint).
  test::ScratchDir whole, parts;
  auto a = run(whole.path.string(), 2);
  run(parts.path.string(), 1);
  auto b = run(parts.path.string(), 2);
  const double scale = a.state.scalars.at("amp.scale");
  EXPECT_EQ(b.state.scalars.at("amp.scale"), scale);
  EXPECT_EQ(b.state.scalars.at("amp.growth_tracker"), a.state.scalars.at("amp.growth_tracker"));
  EXPECT_EQ(std::exp2(std::round(std::log2(scale))), scale) << "a power of two";
  EXPECT_NE(scale, 65536.0) << "32 steps with growth every 4 moved the scale";
  for (const auto& [k, t] : a.state.tensors)
    if (k.rfind("model.", 0) == 0) {
      EXPECT_EQ(t.dtype(), kF32) << k;
      EXPECT_TRUE(equal(t, b.state.tensors.at(k))) << k;
    }
  // Without options the Learner scales by itself on an f16 device, and not on bf16 or f32.
  for (auto [dev, want] : {std::pair{d, true},
                           std::pair{Device::flex().autodiff().mixed_precision(kBF16), false},
                           std::pair{Device::flex().autodiff(), false}}) {
    test::ScratchDir dir;
    AmpRun r(dev, {.epochs = 1, .checkpoint_dir = dir.path.string()});
    r.fit();
    auto f = store::load_state(train::Learner::latest_checkpoint(dir.path.string()));
    EXPECT_EQ(f.state.scalars.count("amp.scale"), want ? 1u : 0u) << dev;
  }
}

}  // namespace
}  // namespace ember

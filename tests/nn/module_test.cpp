// nn::Module behaviour: registration, state_dict round trips and errors, devices, dtypes,
// freezing, deep copies, train/eval switching, containers, and layers against nn::functional.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/nn/modules.h"

namespace ember {
namespace {

namespace F = nn::functional;

bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && allclose(a.detach(), b.detach(), 0, 0);
}

// The STYLE.md example: layers held by value and registered by reference.
struct Net : nn::Module {
  nn::Linear fc1{{.in = 6, .out = 4}}, fc2{{.in = 4, .out = 3}};
  Net() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override { return fc2(relu(fc1(x))); }
};

TEST(Module, ValueMembersRegisterWithDottedNames) {
  Net net;
  std::vector<std::string> keys;
  for (auto& [k, t] : net.state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(net.num_parameters(), 6 * 4 + 4 + 4 * 3 + 3);
  for (const Tensor& p : net.parameters()) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
  }
  // The registry holds the members themselves: forward uses what state_dict shows.
  EXPECT_TRUE(net.named_parameters()[0].second.is_alias_of(net.fc1.weight));
  Tensor x = randn({2, 6});
  Tensor want = F::softmax(
      linear(relu(linear(x, net.fc1.weight, net.fc1.bias)), net.fc2.weight, net.fc2.bias), 1);
  EXPECT_TRUE(allclose(F::softmax(net(x), 1).detach(), want.detach()));
  EXPECT_EQ(net.repr(),
            "Net(\n  (fc1): Linear(in_features=6, out_features=4, bias=True)\n"
            "  (fc2): Linear(in_features=4, out_features=3, bias=True)\n)");
}

struct Custom : nn::Module {
  Custom() {
    register_parameter("scale", ones({3}));
    register_buffer("count", zeros({}, {kI64}));
  }
};

// Tied weights and a module registered twice: parameters() lists each tensor once (so an
// optimizer steps it once) while state_dict keeps every key, as in PyTorch.
struct Tied : nn::Module {
  nn::Linear enc{{.in = 4, .out = 4}}, dec{{.in = 4, .out = 4}};
  Tied() {
    dec.weight = enc.weight;  // the registered slot now holds the encoder's tensor
    register_modules({{"enc", enc}, {"dec", dec}, {"again", enc}});
  }
};

TEST(Module, SharedModulesAndTiedWeightsCountOnce) {
  Tied t;
  std::vector<std::string> params, modules, keys;
  for (auto& [k, p] : t.named_parameters()) params.push_back(k);
  for (auto& [k, m] : t.named_modules()) modules.push_back(k);
  for (auto& [k, v] : t.state_dict()) keys.push_back(k);
  EXPECT_EQ(params, (std::vector<std::string>{"enc.weight", "enc.bias", "dec.bias"}));
  EXPECT_EQ(modules, (std::vector<std::string>{"", "enc", "dec"}));
  EXPECT_EQ(keys, (std::vector<std::string>{"enc.weight", "enc.bias", "dec.weight", "dec.bias",
                                            "again.weight", "again.bias"}));
  EXPECT_EQ(t.num_parameters(), 16 + 4 + 4);
  t.load_state_dict(t.state_dict());
}

TEST(Module, RegistrationErrors) {
  Custom c;
  EXPECT_EQ(c.state_dict().size(), 2u);
  EXPECT_FALSE(c.named_buffers()[0].second.requires_grad());
  struct Dup : nn::Module {
    nn::ReLU r;
    explicit Dup(int kind) {
      if (kind == 0) register_parameter("a", ones({1})), register_parameter("a", ones({1}));
      if (kind == 1) register_buffer("x.y", ones({1}));
      if (kind == 2) register_modules({{"r", r}}), register_buffer("r", ones({1}));
    }
  };
  for (int k = 0; k < 3; ++k) EXPECT_THROW(Dup{k}, ValueError) << k;
  EXPECT_THROW(c.forward(ones({1})), NotImplementedError);
  EXPECT_THROW(c.clone(), NotImplementedError);
}

TEST(Module, LoadStateDictRoundTripAndErrors) {
  Net a, b;
  b.load_state_dict(a.state_dict());
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(same_values(a.parameters()[i], b.parameters()[i]));
  EXPECT_FALSE(a.fc1.weight.is_alias_of(b.fc1.weight));  // copied, not shared
  EXPECT_TRUE(b.fc1.weight.requires_grad());

  nn::StateDict sd = a.state_dict();
  sd.erase(sd.begin() + 1);                   // missing fc1.bias
  sd.emplace_back("fc3.weight", zeros({1}));  // unexpected
  sd[0].second = zeros({4, 5});               // mis-shaped fc1.weight
  try {
    b.load_state_dict(sd);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[load_state_dict]"), std::string::npos) << m;
    EXPECT_NE(m.find("missing keys: fc1.bias"), std::string::npos) << m;
    EXPECT_NE(m.find("unexpected keys: fc3.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("fc1.weight (expected [4, 6], found [4, 5])"), std::string::npos) << m;
  }
  // Nothing was written by the failed load.
  EXPECT_FALSE(same_values(b.fc1.weight, zeros({4, 6})));
  // Non-strict: missing and unexpected keys are ignored, shapes still checked.
  nn::StateDict partial = {{"fc2.bias", full({3}, 7.0)}, {"other", ones({2})}};
  b.load_state_dict(partial, false);
  EXPECT_TRUE(same_values(b.fc2.bias, full({3}, 7.0)));
  EXPECT_THROW(b.load_state_dict({{"fc2.bias", ones({2})}}, false), ValueError);
  // Values of another dtype are cast on load.
  b.load_state_dict({{"fc2.bias", full({3}, 2.0, {kF64})}}, false);
  EXPECT_EQ(b.fc2.bias.dtype(), kF32);
  EXPECT_TRUE(same_values(b.fc2.bias, full({3}, 2.0)));
}

TEST(Module, ToDeviceAndDtypeKeepRequiresGrad) {
  Net net;
  net.fc2.freeze();
  net.to(Device::cpu());
  EXPECT_TRUE(net.fc1.weight.device().same_place(Device::cpu()));
  EXPECT_TRUE(net.fc1.weight.device().has_autodiff());
  EXPECT_TRUE(net.fc1.weight.requires_grad());
  EXPECT_FALSE(net.fc2.weight.requires_grad());
  EXPECT_TRUE(net.fc2.bias.device().same_place(Device::cpu()));
  Tensor y = net(randn({2, 6}, {.device = Device::cpu()}));
  EXPECT_TRUE(y.device().same_place(Device::cpu()));
  net.to(kF64);
  EXPECT_EQ(net.fc1.weight.dtype(), kF64);
  EXPECT_TRUE(net.fc1.weight.requires_grad());
  EXPECT_EQ(net(randn({2, 6}, {kF64, Device::cpu()})).dtype(), kF64);

  nn::BatchNorm1d bn({.features = 3});
  bn.to(kF16);
  EXPECT_EQ(bn.running_mean.dtype(), kF16);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kI64);  // integer buffers keep their dtype
}

// torch's register_buffer(..., persistent=False): a table the module recomputes.
struct WithTable : nn::Module {
  Tensor stats = zeros({2}), table = arange(3.0);
  WithTable() {
    register_buffer("table", table, /*persistent=*/false);
    register_buffer("stats", stats);
  }
};

TEST(Module, NonPersistentBuffersMoveButAreNotSaved) {
  WithTable m;
  ASSERT_EQ(m.named_buffers().size(), 2u);
  EXPECT_EQ(m.named_buffers()[0].first, "table");
  nn::StateDict sd = m.state_dict();
  ASSERT_EQ(sd.size(), 1u);
  EXPECT_EQ(sd[0].first, "stats");
  // Loading neither needs nor accepts the table.
  m.load_state_dict({{"stats", ones({2})}});
  EXPECT_TRUE(same_values(m.stats, ones({2})));
  EXPECT_THROW(m.load_state_dict({{"stats", ones({2})}, {"table", ones({3})}}), ValueError);
  m.to(Device::cpu()).to(kF64);
  EXPECT_TRUE(m.table.device().same_place(Device::cpu()));
  EXPECT_EQ(m.table.dtype(), kF64);
}

TEST(Module, FreezeStopsGradients) {
  Net net;
  net.fc1.freeze();
  EXPECT_EQ(net.num_parameters(true), 4 * 3 + 3);
  EXPECT_EQ(net.num_parameters(), 6 * 4 + 4 + 4 * 3 + 3);
  Gradients g = net(randn({2, 6})).sum().backward();
  EXPECT_TRUE(net.fc2.weight.grad(g).defined());
  EXPECT_FALSE(g.contains(net.fc1.weight));
  net.unfreeze();
  EXPECT_EQ(net.num_parameters(true), net.num_parameters());
  Gradients g2 = net(randn({2, 6})).sum().backward();
  EXPECT_TRUE(net.fc1.weight.grad(g2).defined());
}

TEST(Module, CloneIsDeep) {
  nn::Linear lin({.in = 3, .out = 2});
  auto copy = std::dynamic_pointer_cast<nn::Linear>(lin.clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(same_values(copy->weight, lin.weight));
  EXPECT_FALSE(copy->weight.is_alias_of(lin.weight));
  {
    NoGradGuard ng;
    copy->weight.fill_(0);
  }
  EXPECT_FALSE(same_values(copy->weight, lin.weight));

  Net net;
  net.eval();
  std::shared_ptr<Net> c = nn::clone(net);
  EXPECT_TRUE(same_values(c->fc2.bias, net.fc2.bias));
  EXPECT_FALSE(c->fc2.bias.is_alias_of(net.fc2.bias));
  EXPECT_FALSE(c->is_training());
  EXPECT_FALSE(c->fc1.is_training());

  nn::Sequential seq(nn::Linear({.in = 2, .out = 2}), nn::ReLU());
  auto sc = std::dynamic_pointer_cast<nn::Sequential>(seq.clone());
  ASSERT_TRUE(sc);
  EXPECT_EQ(sc->size(), 2u);
  EXPECT_TRUE(same_values(sc->at<nn::Linear>(0).weight, seq.at<nn::Linear>(0).weight));
  EXPECT_FALSE(sc->at<nn::Linear>(0).weight.is_alias_of(seq.at<nn::Linear>(0).weight));
}

TEST(Module, TrainEvalSwitchesBatchNormAndDropout) {
  nn::BatchNorm2d bn({.features = 3});
  Tensor x = randn({4, 3, 5, 5}) * 2 + 1;
  EXPECT_TRUE(bn.is_training());
  Tensor y = bn(x);
  // Training: batch statistics, so each channel of the output has mean 0.
  EXPECT_TRUE(allclose(y.mean({0, 2, 3}).detach(), zeros({3}), 0, 1e-5));
  Tensor bm = x.mean({0, 2, 3});
  EXPECT_TRUE(allclose(bn.running_mean, bm * 0.1, 1e-5, 1e-6));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  bn.eval();
  Tensor rm = bn.running_mean.clone();
  Tensor ye = bn(x);
  EXPECT_TRUE(same_values(bn.running_mean, rm));  // eval: statistics untouched
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  Tensor want = F::batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, false);
  EXPECT_TRUE(allclose(ye.detach(), want.detach()));

  nn::Sequential seq(nn::Dropout(0.5));
  Tensor ones_in = ones({1000});
  Tensor d = seq(ones_in);
  int64_t zeros_n = (d == 0).sum().item<int64_t>();
  EXPECT_GT(zeros_n, 350);
  EXPECT_LT(zeros_n, 650);
  EXPECT_TRUE(allclose(d.sum(), ones_in.sum(), 0.2, 0));  // survivors scaled by 2
  seq.eval();
  EXPECT_FALSE(seq[0].is_training());
  EXPECT_TRUE(same_values(seq(ones_in), ones_in));
  EXPECT_THROW(nn::Dropout(1.5), ValueError);
  EXPECT_THROW(bn(randn({3, 5})), ShapeError);
}

TEST(Module, LayersMatchFunctional) {
  Tensor x = randn({2, 3, 6, 6});
  nn::Conv2d conv({.in = 3, .out = 4, .kernel = {3, 2}, .stride = 2, .padding = 1, .groups = 1});
  EXPECT_EQ(conv.weight.shape(), (Shape{4, 3, 3, 2}));
  EXPECT_TRUE(
      allclose(conv(x).detach(),
               F::conv2d(x, conv.weight, conv.bias, {.stride = {2}, .padding = {1}}).detach()));
  nn::Conv1d c1({.in = 4, .out = 2, .kernel = 3, .dilation = 2, .groups = 2, .bias = false});
  Tensor x1 = randn({2, 4, 9});
  EXPECT_FALSE(c1.bias.defined());
  EXPECT_EQ(c1.named_parameters().size(), 1u);
  EXPECT_TRUE(allclose(c1(x1).detach(),
                       F::conv1d(x1, c1.weight, {}, {.dilation = {2}, .groups = 2}).detach()));
  EXPECT_EQ(c1.repr(),
            "Conv1d(4, 2, kernel_size=(3,), stride=(1,), dilation=(2,), groups=2, bias=False)");
  EXPECT_THROW(nn::Conv2d({.in = 3, .out = 4, .kernel = 3, .groups = 2}), ValueError);

  EXPECT_TRUE(same_values(nn::MaxPool2d({.kernel = 2})(x), F::max_pool2d(x, {.kernel_size = {2}})));
  EXPECT_TRUE(same_values(nn::AvgPool2d({.kernel = 3, .stride = 1, .padding = 1})(x),
                          F::avg_pool2d(x, {.kernel_size = {3}, .stride = {1}, .padding = {1}})));
  EXPECT_TRUE(same_values(nn::AdaptiveAvgPool2d({2, 3})(x), F::adaptive_avg_pool2d(x, {2, 3})));
  EXPECT_EQ(nn::Flatten()(x).shape(), (Shape{2, 108}));
  EXPECT_TRUE(same_values(nn::Identity()(x), x));

  nn::LayerNorm ln({.shape = {6, 6}});
  EXPECT_TRUE(same_values(ln(x), F::layer_norm(x, {6, 6}, ln.weight, ln.bias)));
  nn::GroupNorm gn({.groups = 3, .channels = 3});
  EXPECT_TRUE(same_values(gn(x), F::group_norm(x, 3, gn.weight, gn.bias)));
  EXPECT_THROW(nn::GroupNorm({.groups = 2, .channels = 3}), ValueError);
  nn::RMSNorm rms({.shape = {6}, .eps = 1e-6});
  EXPECT_TRUE(same_values(rms(x), F::rms_norm(x, {6}, rms.weight, 1e-6)));
  EXPECT_EQ(rms.repr(), "RMSNorm((6,), eps=1e-06, elementwise_affine=True)");

  nn::Embedding emb({.num = 5, .dim = 2, .padding_idx = -1});
  EXPECT_EQ(*emb.options.padding_idx, 4);
  EXPECT_TRUE(same_values(emb.weight[4], zeros({2})));
  Tensor idx = tensor<int64_t>({1, 4, 1});
  EXPECT_TRUE(same_values(emb(idx), F::embedding(idx, emb.weight)));
  EXPECT_THROW(nn::Embedding({.num = 5, .dim = 2, .padding_idx = 5}), ValueError);

  EXPECT_TRUE(same_values(nn::GELU("tanh")(x), gelu(x, "tanh")));
  EXPECT_TRUE(same_values(nn::LeakyReLU(0.2)(x), leaky_relu(x, 0.2)));
  EXPECT_TRUE(same_values(nn::ELU(0.5)(x), elu(x, 0.5)));
  EXPECT_TRUE(same_values(nn::Softmax(1)(x), F::softmax(x, 1)));
  EXPECT_TRUE(same_values(nn::LogSoftmax(-1)(x), F::log_softmax(x, -1)));
  EXPECT_TRUE(same_values(nn::SiLU()(x), silu(x)));
  EXPECT_TRUE(same_values(nn::Tanh()(x), tanh(x)));
  EXPECT_TRUE(same_values(nn::Sigmoid()(x), sigmoid(x)));
  EXPECT_EQ(nn::LeakyReLU().repr(), "LeakyReLU(negative_slope=0.01)");
  EXPECT_EQ(nn::ELU().repr(), "ELU(alpha=1.0)");
}

TEST(Module, Containers) {
  nn::Sequential seq(nn::Linear({.in = 4, .out = 3}), nn::Tanh());
  auto& extra = seq.push_back(std::make_shared<nn::Linear>(nn::LinearOptions{.in = 3, .out = 2}));
  EXPECT_EQ(seq.size(), 3u);
  EXPECT_EQ(&seq[-1], &extra);
  Tensor x = randn({5, 4});
  auto& l0 = seq.at<nn::Linear>(0);
  Tensor want = linear(tanh(linear(x, l0.weight, l0.bias)), extra.weight, extra.bias);
  EXPECT_TRUE(allclose(seq(x).detach(), want.detach()));
  EXPECT_THROW(seq[3], IndexError);
  EXPECT_THROW(seq[-4], IndexError);
  EXPECT_THROW(seq.at<nn::Linear>(1), ValueError);
  std::vector<std::string> keys;
  for (auto& [k, t] : seq.state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));

  nn::ModuleList list;
  list.push_back(nn::ReLU());
  EXPECT_THROW(list(x), NotImplementedError);
  nn::ModuleDict dict;
  dict.insert("act", std::make_shared<nn::ReLU>());
  EXPECT_TRUE(dict.contains("act"));
  EXPECT_TRUE(same_values(dict["act"](x), relu(x)));
  EXPECT_THROW(dict["nope"], IndexError);
  EXPECT_THROW(dict.insert("act", std::make_shared<nn::ReLU>()), ValueError);
  EXPECT_EQ(dict.keys().size(), 1u);
  auto names = seq.named_modules();
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0].first, "");
  EXPECT_EQ(names[3].first, "2");
}

}  // namespace
}  // namespace ember

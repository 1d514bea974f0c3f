// Modules against PyTorch (tests/gen/gen_modules.py -> tests/data/modules/*.json): state_dict keys
// and shapes, parameter counts and the printed summary of a small CNN; its forward pass in eval
// and training mode with known weights; running statistics after a training step; gradients
// reaching every parameter; default initialisation statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "ember/nn/modules.h"
#include "golden.h"

namespace ember {
namespace {

using test::json;

json load(const char* name) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/modules/" + name);
  return json::parse(f);
}

// Mirrors SmallCNN in tests/gen/gen_modules.py.
struct SmallCNN : nn::Module {
  nn::Sequential features{nn::Conv2d({.in = 1, .out = 4, .kernel = 3, .padding = 1}),
                          nn::BatchNorm2d({.features = 4}),
                          nn::ReLU(),
                          nn::MaxPool2d({.kernel = 2}),
                          nn::Conv2d({.in = 4, .out = 6, .kernel = 3, .bias = false}),
                          nn::GroupNorm({.groups = 2, .channels = 6}),
                          nn::GELU(),
                          nn::AdaptiveAvgPool2d(1)};
  nn::Flatten flatten;
  nn::ModuleDict head;
  nn::ModuleList blocks{nn::Linear({.in = 5, .out = 5}), nn::Dropout(0.25), nn::SiLU()};
  nn::BatchNorm1d bn1{{.features = 5, .momentum = std::nullopt}};
  nn::Embedding emb{{.num = 7, .dim = 5, .padding_idx = 0}};

  SmallCNN() {
    head.insert("fc", std::make_shared<nn::Linear>(nn::LinearOptions{.in = 6, .out = 5}));
    head.insert("ln", std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.shape = {5}}));
    register_modules({{"features", features},
                      {"flatten", flatten},
                      {"head", head},
                      {"blocks", blocks},
                      {"bn1", bn1},
                      {"emb", emb}});
  }
  using Module::forward;
  Tensor forward(const Tensor& x, const Tensor& idx) {
    Tensor y = head["ln"](head["fc"](flatten(features(x))));
    for (const auto& b : blocks) y = (*b)(y);
    return bn1(y) + emb(idx);
  }
};

TEST(ModuleGolden, StateDictKeysShapesAndSummary) {
  json g = load("small_cnn.json");
  SmallCNN net;
  auto sd = net.state_dict();
  ASSERT_EQ(sd.size(), g["state_dict"].size());
  for (size_t i = 0; i < sd.size(); ++i) {
    EXPECT_EQ(sd[i].first, g["state_dict"][i][0].get<std::string>());
    EXPECT_EQ(std::vector<int64_t>(sd[i].second.shape().begin(), sd[i].second.shape().end()),
              g["state_dict"][i][1].get<std::vector<int64_t>>())
        << sd[i].first;
  }
  std::vector<std::string> params, buffers;
  for (auto& [k, t] : net.named_parameters()) params.push_back(k);
  for (auto& [k, t] : net.named_buffers()) buffers.push_back(k);
  EXPECT_EQ(params, g["parameters"].get<std::vector<std::string>>());
  EXPECT_EQ(buffers, g["buffers"].get<std::vector<std::string>>());
  EXPECT_EQ(net.num_parameters(), g["num_parameters"].get<int64_t>());
  EXPECT_EQ(net.repr(), g["repr"].get<std::string>());
}

void load_values(SmallCNN& net, const json& g, Device dev) {
  nn::StateDict sd;
  for (const auto& kv : g["values"]) sd.emplace_back(kv[0], test::make_tensor(kv[1], dev));
  net.load_state_dict(sd);
}

TEST(ModuleGolden, ForwardEvalAndTrainMatchPyTorch) {
  json g = load("small_cnn.json");
  for (Device dev : {Device::flex(), Device::cpu()}) {
    SmallCNN net;
    net.to(dev);
    load_values(net, g, dev);
    Tensor x = test::make_tensor(g["x"], dev), idx = test::make_tensor(g["idx"], dev);
    net.eval();
    EXPECT_EQ(test::compare(net.forward(x, idx), g["eval_out"], 1e-4, 1e-5), "");
    net.train();
    net.blocks[1].eval();  // PyTorch's step ran with p = 0 for a deterministic output
    // Batch statistics over 2 samples amplify float rounding: a looser tolerance.
    EXPECT_EQ(test::compare(net.forward(x, idx), g["train_out"], 1e-3, 1e-4), "");
    for (auto& [k, t] : net.named_buffers())
      EXPECT_EQ(test::compare(t, g["after_train"][k], 1e-4, 1e-5), "") << k;
  }
}

TEST(ModuleGolden, GradientsReachEveryParameter) {
  json g = load("small_cnn.json");
  SmallCNN net;
  load_values(net, g, Device::flex());
  Tensor x = test::make_tensor(g["x"], Device::flex());
  Tensor idx = test::make_tensor(g["idx"], Device::flex());
  Tensor loss = square(net.forward(x, idx)).mean();
  Gradients grads = loss.backward();
  for (auto& [k, p] : net.named_parameters()) {
    Tensor gr = p.grad(grads);
    ASSERT_TRUE(gr.defined()) << k;
    EXPECT_EQ(gr.shape(), p.shape()) << k;
    EXPECT_TRUE(all(isfinite(gr)).item<bool>()) << k;
    EXPECT_GT(gr.abs().sum().item<float>(), 0.0f) << k;
  }
  // padding_idx: row 0 of the embedding was looked up but gets no gradient.
  Tensor ge = net.emb.weight.grad(grads);
  EXPECT_EQ(ge[0].abs().sum().item<float>(), 0.0f);
  EXPECT_GT(ge[3].abs().sum().item<float>(), 0.0f);
}

// The sample statistics of ember's initialisation against PyTorch's (different generators, so
// the bounds and moments agree within sampling error, not bit for bit).
TEST(ModuleGolden, InitialisationMatchesPyTorchDistributions) {
  json g = load("init_stats.json");
  manual_seed(1);
  nn::Linear lin({.in = 400, .out = 300});
  nn::Conv2d conv({.in = 16, .out = 64, .kernel = 3});
  nn::Conv1d conv1({.in = 8, .out = 32, .kernel = 5, .groups = 2});
  nn::Embedding emb({.num = 300, .dim = 200});
  std::vector<std::pair<std::string, Tensor>> got = {
      {"linear.weight", lin.weight},   {"linear.bias", lin.bias},
      {"conv2d.weight", conv.weight},  {"conv2d.bias", conv.bias},
      {"conv1d.weight", conv1.weight}, {"conv1d.bias", conv1.bias},
      {"embedding.weight", emb.weight}};
  for (auto& [name, t] : got) {
    const json& s = g[name];
    Tensor d = t.detach().to(kF64);
    double n = s["numel"].get<double>(), std = s["std"].get<double>();
    ASSERT_EQ(d.numel(), int64_t(n)) << name;
    // Mean within 5 standard errors; std within 5% (both samples); bounds within 5% of range.
    EXPECT_NEAR(d.mean().item<double>(), s["mean"].get<double>(), 5 * std / std::sqrt(n) * 2)
        << name;
    EXPECT_NEAR(var(d).sqrt().item<double>(), std, 0.05 * std + 5 * std / std::sqrt(n)) << name;
    if (s.contains("bound")) {  // uniform(-b, b): never beyond b, and close to it when large
      double b = s["bound"].get<double>();
      EXPECT_GE(min(d).item<double>(), -b) << name;
      EXPECT_LE(max(d).item<double>(), b) << name;
      if (n > 1000) {
        EXPECT_NEAR(min(d).item<double>(), -b, 0.01 * b) << name;
        EXPECT_NEAR(max(d).item<double>(), b, 0.01 * b) << name;
        EXPECT_NEAR(s["min"].get<double>(), -b, 0.01 * b) << name;  // PyTorch's sample too
      }
    }
  }
}

}  // namespace
}  // namespace ember

// Conv3d, ConvTranspose1d/2d, 1-D pooling, InstanceNorm, Bilinear and MultiheadAttention against
// PyTorch (tests/gen/gen_modules.py -> tests/data/modules/extras.json): keys, summary, and
// forward passes with known weights; gradients reach every parameter.
#include <gtest/gtest.h>

#include <fstream>

#include "ember/nn/modules.h"
#include "golden.h"
#include "nn/module_golden.h"

namespace ember {
namespace {

using test::json;
using test::check_keys_and_load;
using test::expect_keys_and_summary;

// Mirrors Extras in tests/gen/gen_modules.py.
struct Extras : nn::Module {
  nn::Conv3d conv3{{.in = 2, .out = 3, .kernel = {2, 3, 3}, .stride = {1, 2, 1}, .padding = 1}};
  nn::ConvTranspose1d convt1{
      {.in = 4, .out = 2, .kernel = 3, .stride = 2, .padding = 1, .output_padding = 1}};
  nn::ConvTranspose2d convt2{
      {.in = 4, .out = 6, .kernel = 3, .stride = 2, .groups = 2, .bias = false}};
  nn::MaxPool1d pool1{{.kernel = 2}};
  nn::AvgPool1d avg1{{.kernel = 3, .stride = 1, .padding = 1}};
  nn::AdaptiveAvgPool1d ada1{3};
  nn::InstanceNorm2d inorm{{.features = 6, .affine = true}};
  nn::InstanceNorm1d inorm1{{.features = 4}};
  nn::Bilinear bil{{.in1 = 3, .in2 = 4, .out = 5}};
  nn::MultiheadAttention mha{{.embed_dim = 8, .num_heads = 2}};
  Extras() {
    register_modules({{"conv3", conv3},
                      {"convt1", convt1},
                      {"convt2", convt2},
                      {"pool1", pool1},
                      {"avg1", avg1},
                      {"ada1", ada1},
                      {"inorm", inorm},
                      {"inorm1", inorm1},
                      {"bil", bil},
                      {"mha", mha}});
  }
};

json load() {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/modules/extras.json");
  return json::parse(f);
}

TEST(ModuleExtras, KeysAndSummaryMatchPyTorch) {
  json g = load();
  Extras m;
  expect_keys_and_summary(m, g);
}

TEST(ModuleExtras, ForwardMatchesPyTorch) {
  json g = load();
  Device dev = Device::flex();
  Extras m;
  nn::StateDict sd;
  for (const auto& kv : g["values"]) sd.emplace_back(kv[0], test::make_tensor(kv[1], dev));
  m.load_state_dict(sd);
  m.eval();
  auto in = [&](const char* k) { return test::make_tensor(g["inputs"][k], dev); };
  Tensor x1 = in("x1"), q = in("q"), kv = in("kv"), am = in("am");
  Tensor t2 = m.convt2(in("x2"));
  auto [mo, mw] = m.mha(q, kv, kv, {.key_padding_mask = in("kpm"), .attn_mask = am});
  auto [mo2, mw_heads] = m.mha(q, kv, kv, {.attn_mask = am < 0, .average_attn_weights = false});
  std::vector<std::pair<std::string, Tensor>> got = {{"conv3", m.conv3(in("x3"))},
                                                     {"convt1", m.convt1(x1)},
                                                     {"convt2", t2},
                                                     {"pool1", m.pool1(x1)},
                                                     {"avg1", m.avg1(x1)},
                                                     {"ada1", m.ada1(x1)},
                                                     {"inorm", m.inorm(t2)},
                                                     {"inorm1", m.inorm1(x1[0])},
                                                     {"bil", m.bil(in("a"), in("b"))},
                                                     {"mha_out", mo},
                                                     {"mha_weights", mw},
                                                     {"mha_weights_heads", mw_heads}};
  for (auto& [k, t] : got)
    EXPECT_EQ(test::compare(t.detach(), g["outputs"][k], 1e-4, 1e-5), "") << k;
}

TEST(ModuleExtras, GradientsAndErrors) {
  json g = load();
  Extras m;
  Tensor q = randn({3, 2, 8}), kv = randn({4, 2, 8});
  Tensor loss = square(m.mha(q)).sum() + m.bil(randn({2, 3}), randn({2, 4})).sum() +
                square(m.inorm(m.convt2(randn({1, 4, 3, 3})))).sum() +
                m.conv3(randn({1, 2, 3, 4, 4})).sum() + m.convt1(randn({1, 4, 5})).sum();
  Gradients gr = loss.backward();
  for (auto& [k, p] : m.named_parameters()) {
    ASSERT_TRUE(p.grad(gr).defined()) << k;
    EXPECT_EQ(p.grad(gr).shape(), p.shape()) << k;
  }
  EXPECT_THROW(nn::MultiheadAttention({.embed_dim = 6, .num_heads = 4}), ValueError);
  EXPECT_THROW(m.mha(randn({3, 8})), ShapeError);
  EXPECT_THROW(m.bil(randn({2, 3}), randn({3, 4})), ShapeError);
  EXPECT_THROW(m.inorm(randn({2, 5, 3, 3})), ShapeError);
  EXPECT_THROW(nn::ConvTranspose2d({.in = 3, .out = 4, .kernel = 3, .groups = 2}), ValueError);
  // In-projection from xavier_uniform: bound sqrt(6 / (E + 3E)).
  manual_seed(0);
  nn::MultiheadAttention big({.embed_dim = 64, .num_heads = 4});
  double bound = std::sqrt(6.0 / (64 + 192));
  EXPECT_LE(max(abs(big.in_proj_weight.detach())).item<float>(), bound);
  EXPECT_GT(max(abs(big.in_proj_weight.detach())).item<float>(), 0.99 * bound);
  EXPECT_EQ(abs(big.in_proj_bias.detach()).sum().item<float>(), 0.0f);
  EXPECT_EQ(abs(big.out_proj.bias.detach()).sum().item<float>(), 0.0f);
}

}  // namespace
}  // namespace ember

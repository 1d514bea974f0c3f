// TransformerEncoderLayer / TransformerEncoder against PyTorch (tests/data/modules/
// transformer.json): keys, summaries, and outputs of a post-norm stack with masks and a final
// norm, and of a pre-norm gelu layer (batch first).
#include <gtest/gtest.h>

#include <fstream>

#include "ember/ember.h"
#include "ember/nn/transformer.h"
#include "golden.h"
#include "nn/module_golden.h"

namespace ember {
namespace {

using test::json;
using test::check_keys_and_load;
using test::expect_keys_and_summary;


TEST(TransformerModules, MatchPyTorch) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/modules/transformer.json");
  json g = json::parse(f);
  auto io = [&](const char* k) { return test::make_tensor(g["io"][k], Device::flex()); };

  nn::TransformerEncoderLayer layer(
      {.d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.0});
  nn::TransformerEncoder enc(layer, 2, nn::LayerNormOptions{.shape = {8}});
  check_keys_and_load(enc, g["encoder"]);
  Tensor y = enc.forward(io("x"), {.key_padding_mask = io("kpm"), .attn_mask = io("causal")});
  EXPECT_EQ(test::compare(y.detach(), g["io"]["y"], 1e-4, 1e-5), "");

  nn::TransformerEncoderLayer pre({.d_model = 8,
                                   .nhead = 4,
                                   .dim_feedforward = 12,
                                   .dropout = 0.0,
                                   .activation = "gelu",
                                   .batch_first = true,
                                   .norm_first = true});
  check_keys_and_load(pre, g["pre"]);
  Tensor yb = pre(io("xb"));
  EXPECT_EQ(test::compare(yb.detach(), g["io"]["yb"], 1e-4, 1e-5), "");

  Gradients gr = square(y).sum().backward();
  for (auto& [k, p] : enc.named_parameters()) EXPECT_TRUE(p.grad(gr).defined()) << k;
  auto copy = std::dynamic_pointer_cast<nn::TransformerEncoder>(enc.clone());
  ASSERT_TRUE(copy);
  Tensor yc = copy->forward(io("x"), {.key_padding_mask = io("kpm"), .attn_mask = io("causal")});
  EXPECT_TRUE(allclose(yc.detach(), y.detach()));
  EXPECT_THROW(nn::TransformerEncoderLayer({.d_model = 8, .nhead = 2, .activation = "tanh"}),
               ValueError);
}

}  // namespace
}  // namespace ember

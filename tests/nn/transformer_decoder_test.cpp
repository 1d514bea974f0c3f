// TransformerDecoderLayer / TransformerDecoder / Transformer against PyTorch (tests/data/modules/
// transformer_decoder.json, from tests/gen/gen_transformer_decoder.py): keys, summaries, outputs
// with every mask, gradients of sum(out * w) against torch autograd, errors.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/nn/transformer.h"
#include "golden.h"
#include "nn/module_golden.h"

namespace ember {
namespace {

using test::check_keys_and_load;
using test::json;

class TransformerDecoderGolden : public ::testing::Test {
 protected:
  void SetUp() override { g = test::load_module_golden("transformer_decoder"); }
  Tensor io(const char* k) { return test::make_tensor(g["io"][k], Device::flex()); }
  json g;
};

TEST_F(TransformerDecoderGolden, PostNormStackWithMasks) {
  nn::TransformerDecoderLayer layer(
      {.d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.0});
  nn::TransformerDecoder dec(layer, 2, nn::LayerNormOptions{.shape = {8}});
  check_keys_and_load(dec, g["decoder"]);
  nn::DecoderArgs masks{.tgt_mask = io("tgt_mask"),
                        .memory_mask = io("memory_mask"),
                        .tgt_key_padding_mask = io("tgt_kpm"),
                        .memory_key_padding_mask = io("mem_kpm")};
  Tensor y = dec(io("tgt"), io("memory"), masks);
  EXPECT_EQ(test::compare(y.detach(), g["io"]["y"], 1e-4, 1e-5), "");
  // With dropout, eval mode gives the same (every dropout, attention's too, is off).
  nn::TransformerDecoderLayer dropping(
      {.d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.5});
  nn::TransformerDecoder dec_eval(dropping, 2, nn::LayerNormOptions{.shape = {8}});
  dec_eval.copy_state_from(dec);
  dec_eval.eval();
  EXPECT_EQ(test::compare(dec_eval(io("tgt"), io("memory"), masks), g["io"]["y"], 1e-4, 1e-5), "");

  // Gradients reach every parameter; a deep copy computes the same.
  Gradients gr = square(y).sum().backward();
  for (auto& [k, p] : dec.named_parameters()) EXPECT_TRUE(p.grad(gr).defined()) << k;
  auto copy = std::dynamic_pointer_cast<nn::TransformerDecoder>(dec.clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(allclose(copy->forward(io("tgt"), io("memory"), masks).detach(), y.detach()));
}

TEST_F(TransformerDecoderGolden, PreNormGeluBatchFirstGradients) {
  nn::TransformerDecoderLayer pre({.d_model = 8,
                                   .nhead = 4,
                                   .dim_feedforward = 12,
                                   .dropout = 0.0,
                                   .activation = "gelu",
                                   .batch_first = true,
                                   .norm_first = true});
  check_keys_and_load(pre, g["pre"]);
  Tensor tgt = io("tgtb").requires_grad_(), memory = io("memb").requires_grad_();
  Tensor y = pre(tgt, memory);
  EXPECT_EQ(test::compare(y.detach(), g["io"]["yb"], 1e-4, 1e-5), "");
  Gradients gr = (y * io("w")).sum().backward();
  EXPECT_EQ(test::compare(tgt.grad(gr), g["io"]["g_tgt"], 1e-4, 1e-5), "");
  EXPECT_EQ(test::compare(memory.grad(gr), g["io"]["g_mem"], 1e-4, 1e-5), "");
}

TEST_F(TransformerDecoderGolden, FullTransformer) {
  manual_seed(0);
  nn::Transformer t({.d_model = 8,
                     .nhead = 2,
                     .num_encoder_layers = 2,
                     .num_decoder_layers = 1,
                     .dim_feedforward = 12,
                     .dropout = 0.0,
                     .batch_first = true});
  // torch re-draws every matrix xavier_uniform: bound sqrt(6 / (fan_in + fan_out)).
  Tensor w1 = t.state_dict()[4].second;  // encoder.layers.0.linear1.weight [12, 8]
  EXPECT_LE(max(w1.abs()).item<double>(), std::sqrt(6.0 / 20.0));
  EXPECT_GT(max(w1.abs()).item<double>(), 1.0 / std::sqrt(8.0));  // beyond Linear's default
  check_keys_and_load(t, g["transformer"]);
  Tensor y = t(io("src"), io("tgt2"),
               {.tgt_mask = nn::generate_square_subsequent_mask(3),
                .src_key_padding_mask = io("src_kpm"),
                .memory_key_padding_mask = io("src_kpm")});
  EXPECT_EQ(test::compare(y.detach(), g["io"]["yt"], 1e-4, 1e-5), "");
  auto copy = std::dynamic_pointer_cast<nn::Transformer>(t.clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->state_dict().size(), t.state_dict().size());
}

TEST(TransformerDecoder, SquareSubsequentMaskMatchesTorch) {
  Tensor m = nn::generate_square_subsequent_mask(3);
  EXPECT_EQ(m.shape(), (Shape{3, 3}));
  EXPECT_EQ(m.dtype(), kF32);
  std::vector<float> v = m.to_vector<float>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      if (j > i) {
        EXPECT_TRUE(std::isinf(v[i * 3 + j]) && v[i * 3 + j] < 0);
      } else {
        EXPECT_EQ(v[i * 3 + j], 0.f);
      }
    }
  EXPECT_THROW(nn::generate_square_subsequent_mask(-1), ValueError);
}

TEST(TransformerDecoder, Errors) {
  nn::TransformerDecoderLayer layer({.d_model = 8, .nhead = 2, .dim_feedforward = 16});
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Like torch, a decoder needs memory.
  EXPECT_THROW(layer(randn({3, 2, 8})), ValueError);
  EXPECT_NE(message([&] {
              layer(randn({3, 2, 8}));
            }).find("[TransformerDecoderLayer]"),
            std::string::npos);
  EXPECT_THROW(layer(randn({3, 2, 6}), randn({4, 2, 8})), ShapeError);
  EXPECT_NE(message([&] {
              layer(randn({3, 2, 8}), randn({4, 2}));
            }).find("memory"),
            std::string::npos);
  EXPECT_THROW(nn::TransformerDecoderLayer({.d_model = 8, .nhead = 2, .activation = "tanh"}),
               ValueError);
  EXPECT_THROW(nn::TransformerDecoder(layer, 0), ValueError);
  nn::TransformerDecoder dec(layer, 1);
  EXPECT_THROW(dec(randn({3, 2, 8})), ValueError);
  nn::Transformer t({.d_model = 8,
                     .nhead = 2,
                     .num_encoder_layers = 1,
                     .num_decoder_layers = 1,
                     .dim_feedforward = 8});
  EXPECT_THROW(t(randn({3, 2, 8})), ValueError);
  EXPECT_THROW(t(randn({3, 2, 8}), randn({4, 3, 8})), ShapeError);
  EXPECT_NE(message([&] {
              t(randn({3, 2, 8}), randn({4, 2, 4}));
            }).find("[Transformer]"),
            std::string::npos);
}

}  // namespace
}  // namespace ember

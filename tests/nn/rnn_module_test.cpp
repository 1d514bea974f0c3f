// LSTM and GRU against PyTorch (tests/data/modules/rnn.json): parameter keys, summaries, outputs
// and final states with initial states given; gradients reach every parameter; shape errors.
#include <gtest/gtest.h>

#include <fstream>

#include "ember/ember.h"
#include "ember/nn/rnn.h"
#include "golden.h"
#include "nn/module_golden.h"

namespace ember {
namespace {

using test::json;
using test::check_keys_and_load;
using test::expect_keys_and_summary;

json load() {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/modules/rnn.json");
  return json::parse(f);
}


TEST(RnnModules, LstmMatchesPyTorch) {
  json g = load()["lstm"];
  nn::LSTM lstm({.in = 3, .hidden = 4, .layers = 2, .bidirectional = true});
  check_keys_and_load(lstm, g);
  auto io = [&](const char* k) { return test::make_tensor(g["io"][k], Device::flex()); };
  auto [y, state] = lstm.forward(io("x"), io("h0"), io("c0"));
  auto [hn, cn] = state;
  EXPECT_EQ(test::compare(y.detach(), g["io"]["y"], 1e-4, 1e-5), "");
  EXPECT_EQ(test::compare(hn.detach(), g["io"]["hn"], 1e-4, 1e-5), "");
  EXPECT_EQ(test::compare(cn.detach(), g["io"]["cn"], 1e-4, 1e-5), "");
  Gradients gr = square(y).sum().backward();
  for (auto& [k, p] : lstm.named_parameters()) EXPECT_EQ(p.grad(gr).shape(), p.shape()) << k;
  EXPECT_THROW(lstm(ones({5, 2, 4})), ShapeError);
  EXPECT_THROW(lstm.forward(io("x"), ones({2, 2, 4}), io("c0")), ShapeError);
}

TEST(RnnModules, GruMatchesPyTorch) {
  json g = load()["gru"];
  nn::GRU gru({.in = 3, .hidden = 4, .batch_first = true});
  check_keys_and_load(gru, g);
  auto io = [&](const char* k) { return test::make_tensor(g["io"][k], Device::flex()); };
  auto [y, hn] = gru.forward(io("x"), io("h0"));
  EXPECT_EQ(test::compare(y.detach(), g["io"]["y"], 1e-4, 1e-5), "");
  EXPECT_EQ(test::compare(hn.detach(), g["io"]["hn"], 1e-4, 1e-5), "");
  EXPECT_EQ(gru(io("x")).shape(), (Shape{2, 6, 4}));
  // Initialisation: every parameter uniform(+-1/sqrt(hidden)).
  manual_seed(0);
  nn::GRU big({.in = 64, .hidden = 100});
  for (const Tensor& p : big.parameters()) {
    EXPECT_LE(max(abs(p.detach())).item<float>(), 0.1f);
    EXPECT_GT(max(abs(p.detach())).item<float>(), 0.09f);
  }
  EXPECT_THROW(nn::LSTM({.in = 0, .hidden = 4}), ValueError);
}

}  // namespace
}  // namespace ember

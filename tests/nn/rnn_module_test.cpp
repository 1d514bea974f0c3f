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

// The LSTM's steps written out op by op (the module's formulas before its recurrence became one
// autodiff node): one direction of one layer.
Tensor reference_direction(const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                           const Tensor& b_ih, const Tensor& b_hh, Tensor h, Tensor c,
                           bool reverse, Tensor& h_out, Tensor& c_out) {
  const int64_t t_len = x.size(0);
  TensorList out(static_cast<size_t>(t_len));
  for (int64_t s = 0; s < t_len; ++s) {
    const int64_t t = reverse ? t_len - 1 - s : s;
    TensorList q = chunk(matmul(x[t], w_ih.t()) + b_ih + matmul(h, w_hh.t()) + b_hh, 4, 1);
    c = sigmoid(q[1]) * c + sigmoid(q[0]) * tanh(q[2]);
    h = sigmoid(q[3]) * tanh(c);
    out[size_t(t)] = h;
  }
  h_out = h;
  c_out = c;
  return stack(out, 0);
}

// The gradients of every parameter, the input and both initial states through the recurrence's
// node equal those of the op-by-op steps (2 layers, both directions, a loss on y, h_n and c_n),
// and so do second-order ones (create_graph).
TEST(RnnModules, LstmGradientsMatchOpByOp) {
  for (Device dev : {Device::flex(), Device::cpu()}) {
    manual_seed(3);
    nn::LSTM lstm({.in = 3, .hidden = 5, .layers = 2, .bidirectional = true});
    lstm.to(dev);
    Tensor x = randn({6, 2, 3}, {.device = dev}).requires_grad_(),
           h0 = randn({4, 2, 5}, {.device = dev}).requires_grad_(),
           c0 = randn({4, 2, 5}, {.device = dev}).requires_grad_();
    auto param = [&](const std::string& k) {
      for (auto& [name, p] : lstm.named_parameters())
        if (name == k) return p;
      return Tensor();
    };
    auto loss_of = [&](const Tensor& y, const Tensor& hn, const Tensor& cn) {
      return square(y).sum() + (hn * cn).sum() + (cn * 0.5).sum();
    };
    auto [y, state] = lstm.forward(x, h0, c0);
    Tensor loss = loss_of(y, std::get<0>(state), std::get<1>(state));
    // The reference, on the same parameters.
    Tensor in = x;
    TensorList hn, cn;
    for (int64_t l = 0; l < 2; ++l) {
      TensorList outs;
      for (int64_t d = 0; d < 2; ++d) {
        const std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
        Tensor h, c;
        outs.push_back(reference_direction(in, param("weight_ih" + sfx), param("weight_hh" + sfx),
                                           param("bias_ih" + sfx), param("bias_hh" + sfx),
                                           h0[l * 2 + d], c0[l * 2 + d], d == 1, h, c));
        hn.push_back(h);
        cn.push_back(c);
      }
      in = cat(outs, 2);
    }
    Tensor ref_loss = loss_of(in, stack(hn, 0), stack(cn, 0));
    EXPECT_NEAR(loss.item<float>(), ref_loss.item<float>(), 1e-4);
    TensorList wrt{x, h0, c0};
    for (auto& [k, p] : lstm.named_parameters()) wrt.push_back(p);
    TensorList got = autograd::grad({loss}, wrt, {}, true, true);
    TensorList want = autograd::grad({ref_loss}, wrt, {}, true, true);
    for (size_t i = 0; i < wrt.size(); ++i)
      EXPECT_TRUE(allclose(got[i].detach(), want[i].detach(), 1e-4, 1e-5)) << i;
    // Second order: the gradient of the squared input gradient.
    Tensor g2 = autograd::grad({square(got[0]).sum()}, {x, param("weight_hh_l0")})[1];
    Tensor w2 = autograd::grad({square(want[0]).sum()}, {x, param("weight_hh_l0")})[1];
    EXPECT_TRUE(allclose(g2, w2, 1e-4, 1e-5));
  }
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

// Activation modules against PyTorch (tests/data/modules/activations.json): outputs, printed
// summaries, PReLU's learned slope receiving gradients, and shape errors; the loss modules.
#include <gtest/gtest.h>

#include <fstream>

#include "ember/ember.h"
#include "ember/nn/loss.h"
#include "golden.h"

namespace ember {
namespace {

using test::json;

TEST(ActivationModules, MatchPyTorch) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/modules/activations.json");
  json g = json::parse(f);
  Tensor x = test::make_tensor(g["x"], Device::flex());
  auto prelu4 = std::make_shared<nn::PReLU>(nn::PReLUOptions{.num_parameters = 4});
  prelu4->load_state_dict({{"weight", tensor({0.1f, -0.2f, 0.3f, 0.5f})}});
  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> mods = {
      {"relu6", std::make_shared<nn::ReLU6>()},
      {"softsign", std::make_shared<nn::Softsign>()},
      {"logsigmoid", std::make_shared<nn::LogSigmoid>()},
      {"selu", std::make_shared<nn::SELU>()},
      {"tanhshrink", std::make_shared<nn::Tanhshrink>()},
      {"hardtanh", std::make_shared<nn::Hardtanh>(-0.5, 2.0)},
      {"celu", std::make_shared<nn::CELU>(0.7)},
      {"threshold", std::make_shared<nn::Threshold>(0.1, -2.0)},
      {"glu", std::make_shared<nn::GLU>()},
      {"softmin", std::make_shared<nn::Softmin>(1)},
      {"prelu", std::make_shared<nn::PReLU>()},
      {"prelu4", prelu4},
      {"mish", std::make_shared<nn::Mish>()},
      {"hardswish", std::make_shared<nn::Hardswish>()},
      {"hardsigmoid", std::make_shared<nn::Hardsigmoid>()},
      {"softplus", std::make_shared<nn::Softplus>(2.0, 1.0)},
      {"gelu_tanh", std::make_shared<nn::GELU>("tanh")},
      {"elu", std::make_shared<nn::ELU>(0.5)},
      {"leaky_relu", std::make_shared<nn::LeakyReLU>(0.2)},
      {"silu", std::make_shared<nn::SiLU>()},
      {"log_softmax", std::make_shared<nn::LogSoftmax>(2)}};
  ASSERT_EQ(mods.size(), g["outputs"].size());
  for (auto& [k, m] : mods) {
    EXPECT_EQ(test::compare((*m)(x).detach(), g["outputs"][k], 1e-5, 1e-6), "") << k;
    EXPECT_EQ(m->repr(), g["repr"][k].get<std::string>()) << k;
    auto c = m->clone();  // a deep copy computes the same
    EXPECT_EQ(test::compare((*c)(x).detach(), g["outputs"][k], 1e-5, 1e-6), "") << k;
  }
}

TEST(ActivationModules, PReLUSlopeLearnsAndShapesAreChecked) {
  nn::PReLU p({.num_parameters = 3});
  Tensor x = tensor(std::vector<float>{-1, 2, -3, 4, -5, 6}, {2, 3});
  Gradients g = p(x).sum().backward();
  // d/dw_c = sum of the negative inputs of channel c.
  EXPECT_TRUE(allclose(p.weight.grad(g), tensor({-1.0f, -5.0f, -3.0f})));
  EXPECT_THROW(p(ones({2, 4})), ShapeError);
  EXPECT_THROW(nn::GLU()(ones({2, 3})), ShapeError);
  EXPECT_THROW(nn::PReLU({.num_parameters = 0}), ValueError);
}

TEST(LossModules, CallTheFunctionalFormsWithTheirOptions) {
  manual_seed(4);
  Tensor logits = randn({5, 3}), cls = tensor({0, 2, 1, 1, 0});
  Tensor x = randn({5, 3}), y = randn({5, 3}), p = rand({5, 3}), t = rand({5, 3});
  nn::CrossEntropyLoss ce({.label_smoothing = 0.1});
  EXPECT_TRUE(equal(ce(logits, cls), cross_entropy(logits, cls, {.label_smoothing = 0.1})));
  nn::NLLLoss nll({.reduction = "sum"});
  Tensor lp = log_softmax(logits, 1);
  EXPECT_TRUE(equal(nll(lp, cls), nll_loss(lp, cls, {.reduction = "sum"})));
  EXPECT_TRUE(equal(nn::MSELoss()(x, y), mse_loss(x, y)));
  EXPECT_TRUE(equal(nn::L1Loss("none")(x, y), l1_loss(x, y, "none")));
  EXPECT_TRUE(equal(nn::SmoothL1Loss("mean", 0.5)(x, y), smooth_l1_loss(x, y, "mean", 0.5)));
  EXPECT_TRUE(equal(nn::HuberLoss("sum", 2.0)(x, y), huber_loss(x, y, "sum", 2.0)));
  EXPECT_TRUE(equal(nn::BCELoss()(p, t), binary_cross_entropy(p, t)));
  EXPECT_TRUE(equal(nn::BCEWithLogitsLoss()(x, t), binary_cross_entropy_with_logits(x, t)));
  EXPECT_TRUE(equal(nn::KLDivLoss("sum", true)(lp, log(p)), kl_div(lp, log(p), "sum", true)));
  // A module like any other: it prints, clones and sits behind a Module pointer.
  EXPECT_EQ(ce.repr(), "CrossEntropyLoss()");
  auto copy = std::dynamic_pointer_cast<nn::LossModule>(nn::HuberLoss("sum", 2.0).clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(equal(copy->forward(x, y), huber_loss(x, y, "sum", 2.0)));
}

}  // namespace
}  // namespace ember

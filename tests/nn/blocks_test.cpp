// torchvision's building blocks in nn: Conv2dNormActivation, SqueezeExcitation, StochasticDepth.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/nn/blocks.h"

using namespace ember;

TEST(Blocks, Conv2dNormActivationHasTorchvisionKeys) {
  nn::Conv2dNormActivation c({.in = 3, .out = 8, .kernel = 3, .stride = 2, .activation = "silu"});
  std::vector<std::string> keys;
  for (auto& [k, t] : c.state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"0.weight", "1.weight", "1.bias", "1.running_mean",
                                            "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.at<nn::Conv2d>(0).options.padding.v, Shape({1}));
  Tensor y = c(randn({2, 3, 9, 9}));
  EXPECT_EQ(y.shape(), Shape({2, 8, 5, 5}));
  nn::Conv2dNormActivation plain({.in = 4, .out = 4, .kernel = 1, .activation = ""});
  EXPECT_EQ(plain.size(), 2u);
  auto copy = std::dynamic_pointer_cast<nn::Conv2dNormActivation>(c.clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(allclose(copy->at<nn::Conv2d>(0).weight.detach(), c.at<nn::Conv2d>(0).weight.detach()));
  EXPECT_THROW(nn::Conv2dNormActivation({.in = 1, .out = 1, .activation = "swish"}), ValueError);
}

TEST(Blocks, SqueezeExcitationScalesChannels) {
  manual_seed(0);
  nn::SqueezeExcitation se({.channels = 6, .squeeze_channels = 2, .activation = "silu"});
  std::vector<std::string> keys;
  for (auto& [k, t] : se.state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  Tensor x = randn({2, 6, 4, 5});
  NoGradGuard ng;
  Tensor s = mean(x, {2, 3}, true);
  s = sigmoid(nn::functional::conv2d(silu(nn::functional::conv2d(s, se.fc1.weight, se.fc1.bias)),
                                     se.fc2.weight, se.fc2.bias));
  EXPECT_TRUE(allclose(se(x), x * s, 1e-5, 1e-6));
}

TEST(Blocks, StochasticDepthDropsRowsInTraining) {
  manual_seed(1);
  nn::StochasticDepth sd(0.5, "row");
  Tensor x = ones({64, 3, 2, 2});
  Tensor y = sd(x);
  // Each sample is all zeros or all 2 (kept and scaled by 1 / (1 - p)).
  Tensor per = y.sum({1, 2, 3});
  int64_t zeros_n = sum(eq(per, 0.0)).item<int64_t>(), twos = sum(eq(per, 24.0)).item<int64_t>();
  EXPECT_EQ(zeros_n + twos, 64);
  EXPECT_GT(zeros_n, 10);
  EXPECT_GT(twos, 10);
  nn::StochasticDepth batch(0.5, "batch");
  Tensor b = batch(x).sum().detach();
  float bv = b.item<float>();
  EXPECT_TRUE(bv == 0.0f || bv == 2.0f * 64 * 12);
  sd.eval();
  EXPECT_TRUE(equal(sd(x), x));
  EXPECT_TRUE(equal(nn::StochasticDepth(0.0)(x), x));
  EXPECT_TRUE(equal(nn::StochasticDepth(1.0)(x), zeros_like(x)));
  EXPECT_THROW(nn::StochasticDepth(1.5), ValueError);
  EXPECT_THROW(nn::StochasticDepth(0.1, "col"), ValueError);
  EXPECT_EQ(nn::StochasticDepth(0.2).repr(), "StochasticDepth(p=0.2, mode=row)");
}

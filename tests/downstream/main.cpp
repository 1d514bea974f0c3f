// Built against the installed ember (find_package and pkg-config) by scripts/test.sh.
#include <gtest/gtest.h>

#include <ember/ember.h>
#include <iostream>

TEST(Downstream, InstalledEmberWorks) {
  using namespace ember;
  Tensor x = arange(6, {kF32}).reshape({2, 3});
  Tensor y = (x * 2 + 1).sum({1});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{9, 27}));
  EXPECT_THROW(x + ones({4}), ShapeError);
  // Options structs with designated initializers, and libtorch's spellings, under -Wextra.
  nn::Linear fc({.in = 3, .out = 2});
  nn::Linear fc2(3, 2);
  EXPECT_EQ(fc(x).shape(), fc2(x).shape());
  Tensor img = ones({1, 1, 4, 4}, kFloat32);
  EXPECT_EQ(nn::functional::conv2d(img, ones({1, 1, 3, 3}), {}, {.padding = {1}}).shape(),
            img.shape());
  EXPECT_EQ(x.index({indexing::Slice(), 1}).sum().item<float>(), 5);
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::cout << ember::arange(3) << "\n";
  return RUN_ALL_TESTS();
}

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
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::cout << ember::arange(3) << "\n";
  return RUN_ALL_TESTS();
}

// The planner's simplifications and limits on Device::cpu(): repeated subexpressions run once,
// and groups split at the limits on their size and operands, with the eager results either way.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/fusion.h"
#include "fusion/fusion_helpers.h"

namespace ember {
namespace {
using fusion_test::WaitForKernels;
using fusion_test::run_twice;

struct Limits {
  explicit Limits(fusion::GroupLimits l) : old_(fusion::group_limits()) { fusion::set_group_limits(l); }
  ~Limits() { fusion::set_group_limits(old_); }
  fusion::GroupLimits old_;
};

TEST(Planner, ARepeatedSubexpressionRunsOnce) {
  WaitForKernels wait;
  manual_seed(2);
  Tensor xf = randn({64, 128});
  Tensor want = softmax(xf * 2, 1) + softmax(xf * 2, 1);
  Tensor x = xf.to(Device::cpu());
  Tensor got;
  const fusion::Stats s = run_twice([&] { got = softmax(x * 2, 1) + softmax(x * 2, 1); });
  EXPECT_EQ(s.recorded, 5);
  // One row kernel (x * 2 its prologue); the repeated product and softmax do not run, and the
  // add, a group of one, is the eager kernel.
  EXPECT_EQ(s.fused_kernels, 1);
  EXPECT_EQ(s.eager_ops, 1);
  EXPECT_TRUE(allclose(got.to(Device::flex()), want, 1e-6, 1e-6));
}

TEST(Planner, AWriteInPlaceBetweenRepeatsKeepsBoth) {
  WaitForKernels wait;
  Tensor x = arange(8, {kF32, Device::cpu()});
  Tensor a = x * 2;
  x.copy_(ones({8}, {.device = Device::cpu()}));
  Tensor b = x * 2;
  EXPECT_EQ((a + b).to_vector<float>(),
            (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
}

TEST(Planner, ALongChainSplitsAtTheOpLimit) {
  WaitForKernels wait;
  Limits limits({.ops = 8});
  manual_seed(4);
  Tensor xf = randn({1000});
  auto chain = [](Tensor t) {
    for (int k = 0; k < 40; ++k) t = k % 2 ? t * 0.9 : t + 0.1;
    return t;
  };
  Tensor want = chain(xf);
  Tensor x = xf.to(Device::cpu());
  Tensor got;
  const fusion::Stats s = run_twice([&] { got = chain(x); });
  EXPECT_EQ(s.fused_kernels, 5);
  EXPECT_EQ(s.fused_ops, 40);
  EXPECT_TRUE(equal(got.to(Device::flex()), want));  // the same operations in order
}

TEST(Planner, ManyOperandsSplitAtTheInputLimit) {
  WaitForKernels wait;
  Limits limits({.inputs = 4});
  manual_seed(6);
  std::vector<Tensor> xs, xf;
  for (int k = 0; k < 12; ++k) {
    xf.push_back(randn({300}));
    xs.push_back(xf.back().to(Device::cpu()));
  }
  auto total = [](const std::vector<Tensor>& v) {
    Tensor t = v[0];
    for (size_t k = 1; k < v.size(); ++k) t = t + v[k];
    return t;
  };
  Tensor got;
  const fusion::Stats s = run_twice([&] { got = total(xs); });
  EXPECT_GE(s.fused_kernels, 3);  // no kernel reads more than 4 operands
  EXPECT_EQ(s.fused_ops + s.eager_ops, 11);
  EXPECT_TRUE(equal(got.to(Device::flex()), total(xf)));
}

}  // namespace
}  // namespace ember

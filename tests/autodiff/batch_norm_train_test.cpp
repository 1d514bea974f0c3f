// batch_norm in training mode under autodiff: the running statistics are buffers updated in place
// outside the graph (as in torch), so a training step backpropagates, the buffers never require
// grad, and no history builds up across steps.
#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

namespace F = nn::functional;

struct Bn {
  Tensor w = (rand({3}, {.dtype = DType::F64}) + 0.5).requires_grad_();
  Tensor b = randn({3}, {.dtype = DType::F64}).requires_grad_();
  Tensor rm = zeros({3}, {.dtype = DType::F64, .device = Device::flex().autodiff()});
  Tensor rv = ones({3}, {.dtype = DType::F64, .device = Device::flex().autodiff()});
  Tensor operator()(const Tensor& x, bool training) {
    return F::batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
  }
};

TEST(BatchNormTraining, BackwardRunsAfterTheRunningStatisticsAreUpdated) {
  manual_seed(3);
  Bn bn;
  Tensor x = randn({4, 3, 5}, {.dtype = DType::F64}).requires_grad_();
  Tensor loss = (bn(x, true) * randn({4, 3, 5}, {.dtype = DType::F64})).sum();
  Gradients g;
  ASSERT_NO_THROW(g = loss.backward());  // the op must not have saved the buffers it updates
  EXPECT_TRUE(g.get(x).defined());
  EXPECT_TRUE(g.get(bn.w).defined());
  // running = 0.9 * running + 0.1 * batch statistic (unbiased variance), outside the graph
  Tensor xd = x.detach();
  EXPECT_TRUE(allclose(bn.rm, xd.mean({0, 2}) * 0.1));
  EXPECT_TRUE(allclose(bn.rv, var(xd, {0, 2}) * 0.1 + 0.9));
  EXPECT_FALSE(bn.rm.requires_grad());
  EXPECT_FALSE(bn.rv.requires_grad());
}

TEST(BatchNormTraining, EvaluationAfterTrainingStepsDoesNotReachOldGraphs) {
  manual_seed(4);
  Bn bn;
  Tensor x = randn({4, 3, 5}, {.dtype = DType::F64}).requires_grad_();
  for (int step = 0; step < 3; ++step) bn(x * (step + 1.0), true).pow(2).sum().backward();
  // Evaluation normalises with the running statistics: backward must stay within this graph.
  Gradients g;
  ASSERT_NO_THROW(g = bn(x, false).pow(2).sum().backward());
  EXPECT_TRUE(g.get(x).defined());
}

TEST(BatchNormTraining, RepeatedStepsKeepNoHistory) {
  manual_seed(5);
  Bn bn;
  Tensor x = randn({8, 3, 4}, {.dtype = DType::F64});
  int64_t before = 0;
  for (int step = 0; step < 50; ++step) {
    bn(x, true).pow(2).mean().backward();
    if (step == 5) before = detail::live_tensors();
  }
  EXPECT_LE(detail::live_tensors(), before + 2);
}

}  // namespace
}  // namespace ember

// Row kernels with a pointwise epilogue on Device::cpu(): a sum or mean whose value only the
// elementwise ops after it read, broadcast back over the row, runs as one kernel with them
// (the backward of softmax and log_softmax, cross-entropy's backward), equal to eager.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/fusion.h"
#include "fusion/fusion_helpers.h"
#include "ember/nn/functional.h"

namespace ember {
namespace {
using fusion_test::WaitForKernels;
using fusion_test::run_twice;

TEST(RowEpilogue, CenteringByTheRowMeanIsOneKernel) {
  WaitForKernels wait;
  manual_seed(7);
  Tensor xf = randn({96, 130});
  auto f = [](const Tensor& x) { return (x - mean(x, {1}, true)) * 3; };
  Tensor x = xf.to(Device::cpu()), got;
  const fusion::Stats s = run_twice([&] { got = f(x); });
  EXPECT_EQ(s.fused_kernels, 1);
  EXPECT_EQ(s.fused_ops, 3);
  EXPECT_EQ(s.eager_ops, 0);
  EXPECT_TRUE(allclose(got.to(Device::flex()), f(xf), 1e-6, 1e-6));
}

TEST(RowEpilogue, ASumHeldOutsideStaysItsOwnKernel) {
  WaitForKernels wait;
  Tensor x = ones({4, 8}, {.device = Device::cpu()});
  Tensor s = sum(x, {1}, true);
  Tensor y = x - s;
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(32, -7));
  EXPECT_EQ(s.to_vector<float>(), std::vector<float>(4, 8));
}

// Pointwise ops queued before the row sum that they do not feed still join its epilogue: the
// planner runs the row first (nothing it reads comes from them), whatever the queueing order.
TEST(RowEpilogue, PointwiseOpsQueuedBeforeAnIndependentRowJoinItsEpilogue) {
  WaitForKernels wait;
  manual_seed(11);
  Tensor yf = randn({64, 50}), gf = randn({64, 50});
  auto f = [](const Tensor& y, const Tensor& g) {
    Tensor e = exp(y) * 0.5;                // queued first, independent of the sum
    Tensor s = sum(g, {1}, true);
    return g - e * s;
  };
  Tensor y = yf.to(Device::cpu()), g = gf.to(Device::cpu()), got;
  const fusion::Stats s = run_twice([&] { got = f(y, g); });
  EXPECT_EQ(s.fused_kernels, 1);
  EXPECT_EQ(s.eager_ops, 0);
  EXPECT_TRUE(allclose(got.to(Device::flex()), f(yf, gf), 1e-5, 1e-6));
  // A pointwise value the row reads keeps its place before the row (it is the row's input).
  Tensor got2;
  auto h = [](const Tensor& a) {
    Tensor b = a * 2;
    return b - sum(b, {1}, true);
  };
  run_twice([&] { got2 = h(y); });
  EXPECT_TRUE(allclose(got2.to(Device::flex()), h(yf), 1e-5, 1e-5));
}

void check_backward(const char* what, Tensor (*fn)(const Tensor&)) {
  WaitForKernels wait;
  manual_seed(8);
  Tensor xf = randn({64, 50}), gf = randn({64, 50});
  Tensor xr = xf.clone().requires_grad_();
  Tensor want = xr.grad(fn(xr).backward({.grad_output = gf}));
  Tensor x = xf.to(Device::cpu().autodiff()).requires_grad_(), g = gf.to(Device::cpu()), got;
  Tensor y = fn(x);
  synchronize(Device::cpu());
  const fusion::Stats s = run_twice([&] { got = x.grad(y.backward({.grad_output = g, .retain_graph = true})); });
  EXPECT_EQ(s.fused_kernels, 1) << what;  // the row sum and its elementwise tail
  EXPECT_EQ(s.eager_ops, 0) << what;
  EXPECT_TRUE(allclose(got.to(Device::flex()), want, 1e-5, 1e-6)) << what;
}

TEST(RowEpilogue, SoftmaxBackwardIsOneKernel) {
  check_backward("softmax", [](const Tensor& t) { return softmax(t, 1); });
}
TEST(RowEpilogue, LogSoftmaxBackwardIsOneKernel) {
  check_backward("log_softmax", [](const Tensor& t) { return log_softmax(t, 1); });
}

// Cross-entropy's backward: the per-row coefficients (one kernel over the batch), then the
// one-hot select, the row sum and log_softmax's backward in one row kernel.
TEST(RowEpilogue, CrossEntropyBackwardIsTwoKernels) {
  WaitForKernels wait;
  manual_seed(9);
  Tensor xf = randn({64, 10});
  Tensor yf = randint(0, 10, {64}, {.dtype = kI64});
  yf = where(lt(arange(64, {kI64}), 5), Scalar(int64_t(-100)), yf);  // a few ignored rows
  struct Case {
    CrossEntropyOptions o;
    int64_t kernels;
  };
  const Case cases[] = {{{}, 2},
                        {{.reduction = "sum"}, 2},
                        {{.reduction = "none"}, -1},
                        {{.label_smoothing = 0.1}, -1}};
  for (const Case& c : cases) {
    Tensor xr = xf.clone().requires_grad_();
    Tensor lr = cross_entropy(xr, yf, c.o);
    Tensor want = xr.grad(c.o.reduction == "none" ? lr.backward({.grad_output = ones_like(lr)})
                                                  : lr.backward());
    Tensor x = xf.to(Device::cpu().autodiff()).requires_grad_(), y = yf.to(Device::cpu());
    Tensor l = cross_entropy(x, y, c.o), got;
    Tensor seed = ones_like(l.detach());
    synchronize(Device::cpu());
    const fusion::Stats s = run_twice([&] {
      got = x.grad(l.backward({.grad_output = seed, .retain_graph = true}));
    });
    if (c.kernels >= 0) EXPECT_EQ(s.fused_kernels, c.kernels) << c.o.reduction;
    EXPECT_TRUE(allclose(got.to(Device::flex()), want, 1e-5, 1e-6))
        << c.o.reduction << " " << c.o.label_smoothing;
  }
}

}  // namespace
}  // namespace ember

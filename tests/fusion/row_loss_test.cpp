// Cross-entropy's forward on Device::cpu(): log_softmax and nll_loss as one row kernel that never
// writes the log-probabilities, then a tiny kernel adding its rows up (every reduction, ignored
// targets, class weights, a prologue, 1-D and spatial inputs), equal to the eager result.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/fusion.h"
#include "ember/nn/functional.h"
#include "fusion/fusion_helpers.h"

namespace ember {
namespace {
using fusion_test::WaitForKernels;
using fusion_test::run_twice;

struct Case {
  const char* what;
  Shape x;
  CrossEntropyOptions o;
  bool scaled = false;  // (x * 2) in front: the kernel's prologue
  DType dtype = kF32;
};

void check(const Case& c) {
  WaitForKernels wait;
  manual_seed(11);
  const int64_t classes = c.x.size() == 1 ? c.x[0] : c.x[1];
  Shape ts;  // x's dims without the classes
  for (size_t d = 0; d < c.x.size(); ++d)
    if (d != (c.x.size() == 1 ? 0 : 1)) ts.push_back(c.x[d]);
  Tensor xf = randn(c.x).to(c.dtype);
  Tensor yf = randint(0, classes, ts, {.dtype = kI64});
  if (yf.numel() > 4)  // a few ignored targets
    yf = where(lt(arange(yf.numel(), {kI64}).reshape(ts), 3), Scalar(int64_t(c.o.ignore_index)),
               yf);
  CrossEntropyOptions o = c.o;
  auto f = [&](const Tensor& x, const Tensor& y, const CrossEntropyOptions& oo) {
    return cross_entropy(c.scaled ? x * 2 : x, y, oo);
  };
  const Device ref = Device::cpu().eager();
  if (o.weight.defined()) o.weight = o.weight.to(c.dtype).to(ref);
  Tensor want = f(xf.to(ref), yf.to(ref), o).to(Device::flex());
  if (o.weight.defined()) o.weight = o.weight.to(Device::cpu());
  Tensor x = xf.to(Device::cpu()), y = yf.to(Device::cpu()), got;
  const fusion::Stats s = run_twice([&] { got = f(x, y, o); });
  EXPECT_EQ(s.fused_kernels, 2) << c.what;  // the rows, then their sum
  EXPECT_EQ(s.eager_ops, 0) << c.what;
  EXPECT_EQ(s.fused_ops, c.scaled ? 3 : 2) << c.what;  // log_softmax and nll_loss (and x * 2)
  ASSERT_EQ(got.shape(), want.shape()) << c.what;
  EXPECT_TRUE(allclose(got.to(Device::flex()), want, 1e-6, 1e-6))
      << c.what << "\n" << got << "\n" << want;
}

TEST(RowLoss, CrossEntropyForwardIsOneRowKernel) {
  const Tensor w = rand({10}) + 0.5;
  const Case cases[] = {
      {"mean", {64, 10}, {}},
      {"sum", {64, 10}, {.reduction = "sum"}},
      {"none", {64, 10}, {.reduction = "none"}},
      {"ignore in range", {64, 10}, {.ignore_index = 3}},
      {"weight mean", {64, 10}, {.weight = w}},
      {"weight none", {64, 10}, {.weight = w, .reduction = "none"}},
      {"prologue", {64, 10}, {}, true},
      {"long rows", {16, 1000}, {}},
      {"f64", {32, 10}, {.weight = w}, false, kF64},
      {"1-d", {10}, {}},
      {"spatial", {6, 10, 7}, {.reduction = "none"}},
      {"spatial mean", {6, 10, 7}, {.weight = w}},
  };
  for (const Case& c : cases) check(c);
}

// 'none' without weights is -logp[target] per row, logp computed with the combiner and formula of
// the lazy log_softmax's own row kernel; the vector width (hence the order the row's lanes
// merge in) may differ, so not bitwise, but within float rounding of that kernel and nll_loss.
TEST(RowLoss, NoneMatchesTheUnmergedKernels) {
  WaitForKernels wait;
  manual_seed(12);
  Tensor x = randn({33, 17}, {.device = Device::cpu()});
  Tensor y = randint(0, 17, {33}, {.dtype = kI64, .device = Device::cpu()});
  Tensor lp = log_softmax(x, 1);  // held: written by its row kernel, then nll_loss
  Tensor want = nll_loss(lp, y, {.reduction = "none"});
  synchronize(Device::cpu());
  fusion::reset_stats();
  Tensor got = cross_entropy(x, y, {.reduction = "none"});
  synchronize(Device::cpu());
  EXPECT_EQ(fusion::stats().fused_ops, 2);  // the loss kernel, not the two above
  EXPECT_TRUE(allclose(got.to(Device::flex()), want.to(Device::flex()), 1e-6, 1e-7));
}

// A target the same queue computes and a transposed input: still one loss kernel.
TEST(RowLoss, PendingTargetAndStridedInput) {
  WaitForKernels wait;
  manual_seed(14);
  Tensor xf = randn({10, 40}), yf = randint(0, 10, {40}, {.dtype = kI64});
  const Device ref = Device::cpu().eager();
  Tensor want = cross_entropy(xf.to(ref).t(), yf.to(ref), {.reduction = "sum"});
  Tensor x = xf.to(Device::cpu()), y = yf.to(Device::cpu()), got;
  const fusion::Stats s = run_twice([&] {
    got = cross_entropy(x.t(), (y + 1) - 1, {.reduction = "sum"});
  });
  EXPECT_EQ(s.eager_ops, 0);
  EXPECT_NEAR(got.item<float>(), want.item<float>(), 1e-4);
}

TEST(RowLoss, ABadTargetFails) {
  WaitForKernels wait;
  Tensor x = randn({4, 5}, {.device = Device::cpu()});
  Tensor y = tensor<int64_t>({0, 7, 1, 2}).to(Device::cpu());
  EXPECT_THROW(
      {
        Tensor l = cross_entropy(x, y);
        l.item<float>();
      },
      IndexError);
}

// The log-probabilities read elsewhere too (label smoothing, a held value): no loss kernel, the
// same result.
TEST(RowLoss, HeldLogProbabilitiesAreWritten) {
  WaitForKernels wait;
  manual_seed(13);
  Tensor xf = randn({20, 6});
  Tensor yf = randint(0, 6, {20}, {.dtype = kI64});
  const Device ref = Device::cpu().eager();
  Tensor want = cross_entropy(xf.to(ref), yf.to(ref), {.label_smoothing = 0.1}).to(Device::flex());
  Tensor got = cross_entropy(xf.to(Device::cpu()), yf.to(Device::cpu()), {.label_smoothing = 0.1});
  EXPECT_TRUE(allclose(got.to(Device::flex()), want, 1e-6, 1e-6));
  Tensor x = xf.to(Device::cpu());
  Tensor lp = log_softmax(x, 1);
  Tensor l = nll_loss(lp, yf.to(Device::cpu()));
  EXPECT_TRUE(allclose(l.to(Device::flex()),
                       nll_loss(log_softmax(xf, 1), yf), 1e-6, 1e-6));
  EXPECT_TRUE(allclose(lp.to(Device::flex()), log_softmax(xf, 1), 1e-6, 1e-6));
}

}  // namespace
}  // namespace ember

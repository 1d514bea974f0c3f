// Kernel timing (ember/profile.h): what counts as one kernel call, and nothing when off.
#include <gtest/gtest.h>

#include <algorithm>

#include "ember/ember.h"
#include "ember/profile.h"

namespace ember {
namespace {

namespace F = nn::functional;

// Turns timing on for one test and restores the previous state.
struct Profiling {
  bool prev = profile::enabled();
  Profiling() {
    profile::set_enabled(true);
    profile::reset();
  }
  ~Profiling() { profile::set_enabled(prev); }
};

int64_t calls_of(const std::string& op) {
  auto stats = profile::op_stats();
  auto it = std::find_if(stats.begin(), stats.end(), [&](auto& s) { return s.op == op; });
  return it == stats.end() ? 0 : it->calls;
}

TEST(Profile, CountsOutermostKernelCalls) {
  Tensor a = randn({64, 64}), b = randn({64, 64}), bias = randn({64});
  Profiling on;
  Tensor c = a + b;
  EXPECT_EQ(profile::kernel_calls(), 1);
  EXPECT_EQ(calls_of("add"), 1);
  EXPECT_GT(profile::kernel_ns(), 0);
  // linear's kernel copies the bias into its output through another op: still one call.
  profile::reset();
  Tensor y = linear(a, b, bias);
  EXPECT_EQ(profile::kernel_calls(), 1);
  EXPECT_EQ(calls_of("linear"), 1);
  EXPECT_EQ(calls_of("copy"), 0);
  // A composite op without a kernel is timed through the kernels of its decomposition.
  profile::reset();
  Tensor l = F::cross_entropy(a, randint(0, 64, {64}));
  EXPECT_EQ(calls_of("cross_entropy"), 0);
  EXPECT_EQ(calls_of("log_softmax"), 1);
  EXPECT_EQ(calls_of("nll_loss"), 1);
  double per_op = 0;
  for (const auto& s : profile::op_stats()) per_op += s.ns;
  EXPECT_DOUBLE_EQ(per_op, profile::kernel_ns());
}

TEST(Profile, OffCountsNothingAndBackwardKernelsAreCounted) {
  Tensor w = randn({8, 4}).requires_grad_();
  Tensor x = randn({3, 4});
  {
    Profiling on;
    profile::set_enabled(false);
    Tensor y = x + 1;
    EXPECT_EQ(profile::kernel_calls(), 0);
  }
  Profiling on;
  Tensor loss = linear(x, w).sum();
  const int64_t forward = profile::kernel_calls();
  EXPECT_EQ(forward, 2);  // linear, sum
  Gradients g = loss.backward();
  EXPECT_GT(profile::kernel_calls(), forward);  // the rules' ops run kernels too
  EXPECT_TRUE(g.contains(w));
}

}  // namespace
}  // namespace ember

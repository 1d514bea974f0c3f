// Dropout on Device::cpu(): the mask is drawn inside the kernel that applies it (Philox keyed by
// the op's seed and counter offset, kl/random.h), bit for bit the stream eager dropout draws:
// alone, with a residual add, over strided inputs, in several dtypes, in one kernel each; the
// backward draws the same mask again (nothing is saved) inside the gradient's kernel.
#include <gtest/gtest.h>

#include <cstring>

#include "ember/ember.h"
#include "ember/fusion.h"
#include "ember/nn/functional.h"
#include "fusion/fusion_helpers.h"

namespace ember {
namespace {
using fusion_test::run_twice;
using fusion_test::WaitForKernels;

// Empty when `got` and `want` hold the same bits.
std::string bits_differ(const Tensor& got, const Tensor& want) {
  const Tensor a = got.to(Device::flex()).contiguous(), b = want.to(Device::flex()).contiguous();
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return "shapes or dtypes differ";
  if (std::memcmp(a.raw_data(), b.raw_data(), size_t(a.numel()) * itemsize(a.dtype())) != 0)
    return "values differ";
  return "";
}

struct Case {
  const char* what;
  Shape shape;
  DType dtype = kF32;
  double p = 0.3;
  bool residual = false;    // y + dropout(x)
  bool transposed = false;  // dropout of a strided view
};

void check(const Case& c) {
  WaitForKernels wait;
  manual_seed(5);
  const Tensor xf = randn(c.shape).to(c.dtype), rf = randn(c.shape).to(c.dtype);
  auto f = [&](const Tensor& x, const Tensor& r) {
    const Tensor in = c.transposed ? x.t() : x;
    const Tensor d = dropout(in, c.p);
    return c.residual ? (c.transposed ? r.t() : r) + d : d;
  };
  manual_seed(9);
  const Tensor want = f(xf, rf);  // flex, eager
  const Tensor x = xf.to(Device::cpu()), r = rf.to(Device::cpu());
  Tensor got;
  const fusion::Stats s = run_twice([&] {
    manual_seed(9);
    got = f(x, r);
  });
  EXPECT_EQ(s.fused_kernels, 1) << c.what;
  EXPECT_EQ(s.eager_ops, 0) << c.what;
  // bernoulli, its scale and the product (and the add)
  EXPECT_EQ(s.fused_ops, c.residual ? 4 : 3) << c.what;
  EXPECT_EQ(bits_differ(got, want), "") << c.what;
}

TEST(Dropout, MaskIsDrawnInTheKernelBitwiseAsEager) {
  const Case cases[] = {
      {"f32", {64, 257}},
      {"f32 small", {7}, kF32, 0.5},
      {"f64", {33, 65}, kF64, 0.1},
      {"bf16", {40, 24}, kBF16, 0.25},
      {"f16", {1000}, kF16, 0.6},
      {"transposed", {48, 40}, kF32, 0.3, false, true},
      {"residual", {64, 257}, kF32, 0.1, true},
      {"residual transposed", {48, 40}, kF32, 0.2, true, true},
  };
  for (const Case& c : cases) check(c);
}

// Each call draws its own counters: two dropouts in one queue differ, and each equals eager's.
TEST(Dropout, EveryCallDrawsAnotherStream) {
  WaitForKernels wait;
  manual_seed(3);
  const Tensor xf = randn({128, 64});
  manual_seed(4);
  const Tensor a = dropout(xf, 0.5), b = dropout(xf, 0.5);
  const Tensor x = xf.to(Device::cpu());
  manual_seed(4);
  const Tensor ga = dropout(x, 0.5), gb = dropout(x, 0.5);
  EXPECT_EQ(bits_differ(ga, a), "");
  EXPECT_EQ(bits_differ(gb, b), "");
  EXPECT_NE(bits_differ(ga, gb), "");
}

// Under autodiff the gradient is g * mask * scale with the mask drawn again from the forward's
// Philox state: the same bits as eager autodiff. Forward and backward in one queue over one
// shape are one kernel: each draws the mask, none stores it.
TEST(Dropout, BackwardRedrawsTheMask) {
  WaitForKernels wait;
  manual_seed(6);
  const Tensor xf = randn({96, 130}), gf = randn({96, 130}), rf = randn({96, 130});
  auto grads = [&](Device d) {
    Tensor x = xf.to(d).requires_grad_(), r = rf.to(d);
    Tensor y = r + dropout(x, 0.2);
    Gradients g = y.backward({.grad_output = gf.to(d)});
    return std::pair{y, x.grad(g)};
  };
  manual_seed(8);
  const auto want = grads(Device::flex().autodiff());
  std::pair<Tensor, Tensor> got;
  const fusion::Stats s = run_twice([&] {
    manual_seed(8);
    got = grads(Device::cpu().autodiff());
  });
  EXPECT_EQ(bits_differ(got.first, want.first), "");
  EXPECT_EQ(bits_differ(got.second, want.second), "");
  EXPECT_EQ(s.fused_kernels, 1);
  EXPECT_EQ(s.fused_ops, 7);  // bernoulli, scale, product, add; bernoulli, scale, product
  EXPECT_EQ(s.eager_ops, 0);
}

// p = 0, p = 1 and evaluation mode draw nothing and stay what they were.
TEST(Dropout, EdgeProbabilities) {
  const Tensor x = randn({10, 10}, {.device = Device::cpu()});
  EXPECT_EQ(bits_differ(dropout(x, 0.0), x), "");
  EXPECT_EQ(bits_differ(dropout(x, 0.7, false), x), "");
  EXPECT_TRUE(allclose(dropout(x, 1.0).to(Device::flex()), zeros({10, 10})));
}

}  // namespace
}  // namespace ember

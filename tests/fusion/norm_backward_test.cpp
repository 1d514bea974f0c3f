// The backward of layer_norm and rms_norm on Device::cpu(): the affine gradients (sum(g * xhat)
// and sum(g) over every dim but the features) are one row kernel with two combiners; the
// kernel count of the whole backward is pinned, the gradients equal flex's.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/fusion.h"
#include "ember/nn/functional.h"
#include "fusion/convnet_step.h"
#include "fusion/fusion_helpers.h"

namespace ember {
namespace {
using fusion_test::WaitForKernels;
using fusion_test::run_twice;

struct Grads {
  Tensor x, w, b;
};

template <class F>
void check(const char* what, F&& fn, bool bias, int64_t kernels) {
  WaitForKernels wait;
  manual_seed(21);
  Tensor xf = randn({8, 16, 32}), wf = randn({32}), bf = randn({32}), gf = randn({8, 16, 32});
  auto grads = [&](Device d) {
    Tensor x = xf.to(d).requires_grad_(), w = wf.to(d).requires_grad_(),
           b = bf.to(d).requires_grad_();
    Tensor y = fn(x, w, bias ? b : Tensor());
    Gradients g = y.backward({.grad_output = gf.to(d)});
    return Grads{x.grad(g), w.grad(g), bias ? b.grad(g) : Tensor()};
  };
  const Grads want = grads(Device::flex().autodiff());
  Grads got;
  const fusion::Stats s = run_twice([&] { got = grads(Device::cpu().autodiff()); });
  EXPECT_EQ(s.fused_kernels, kernels) << what;
  EXPECT_TRUE(allclose(got.x.to(Device::flex()), want.x, 1e-4, 1e-5)) << what;
  EXPECT_TRUE(allclose(got.w.to(Device::flex()), want.w, 1e-4, 1e-5)) << what;
  if (bias) EXPECT_TRUE(allclose(got.b.to(Device::flex()), want.b, 1e-4, 1e-5)) << what;
}

// Forward and backward: the norm, the normalised input again (xhat) and rstd, the products of the
// cotangent, a row mean, the other row mean with the elementwise ops of dx as its epilogue, and
// one kernel for both affine gradients (two before the sibling reductions merged).
TEST(NormBackward, LayerNormAffineGradientsShareAKernel) {
  check("layer_norm",
        [](const Tensor& x, const Tensor& w, const Tensor& b) {
          return layer_norm(x, {32}, w, b, 1e-5);
        },
        true, 6);
}

TEST(NormBackward, RmsNorm) {
  check("rms_norm",
        [](const Tensor& x, const Tensor& w, const Tensor&) { return rms_norm(x, {32}, w, 1e-6); },
        false, 4);
}

// Two sums over the same rows, nothing else: one kernel.
TEST(NormBackward, SiblingSumsAreOneKernel) {
  WaitForKernels wait;
  manual_seed(22);
  Tensor af = randn({64, 48}), bf = randn({64, 48});
  Tensor a = af.to(Device::cpu()), b = bf.to(Device::cpu()), s1, s2;
  const fusion::Stats s = run_twice([&] {
    s1 = sum(a * b, {0});
    s2 = sum(a, {0});
  });
  EXPECT_EQ(s.fused_kernels, 1);
  EXPECT_EQ(s.eager_ops, 0);
  EXPECT_TRUE(allclose(s1.to(Device::flex()), sum(af * bf, {0}), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(s2.to(Device::flex()), sum(af, {0}), 1e-5, 1e-5));
}

// A training batch norm subtracts the batch mean, so the gradient of a bias before it (the
// convolution's: sum(g, {0, 2, 3}) of batch norm's input gradient) is zero: ~1e-17 at float64,
// rounding noise at f32 on every device (~5e-8, fused or not). Compared with rel_error it is off
// by ~1e9 everywhere; against the size of the terms summed (the weight gradient of the same
// convolution stands for it) it is at noise level, as every other gradient of the step is.
TEST(NormBackward, BatchNormCancelsTheBiasBeforeIt) {
  WaitForKernels wait;
  const std::vector<Tensor> want = fusion_test::convnet_step(Device::flex().autodiff(), kF64);
  const double scale = fusion_test::norm2(want[0]);
  EXPECT_LT(fusion_test::norm2(want[1]), 1e-12 * scale);
  for (Device d : {Device::cpu().autodiff(), Device::flex().autodiff()}) {
    const std::vector<Tensor> got = fusion_test::convnet_step(d, kF32);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const double err = fusion_test::norm2(got[i].to(Device::flex()).to(kF64) - want[i]);
      EXPECT_LT(err, (i == 1 ? scale : fusion_test::norm2(want[i])) * 1e-5) << i;
    }
  }
}

}  // namespace
}  // namespace ember

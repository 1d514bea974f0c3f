// The backward of layer_norm and rms_norm on Device::cpu(): dx is one row kernel per norm (its
// statistics, xhat and the cotangent's products never reach memory; xhat is written only for the
// affine gradients), the affine gradients (sum(g * xhat) and sum(g) over every dim but the
// features) one row kernel with two combiners; the kernel count of the whole backward is pinned
// and the gradients are within float rounding of flex's (the fused kernel's one-pass identity
// sums in another order than the eager closed form).
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/fusion.h"
#include "ember/nn/functional.h"
#include "ember/ops/registry.h"
#include "fusion/convnet_step.h"
#include "fusion/fusion_helpers.h"

namespace ember {
namespace {
using fusion_test::WaitForKernels;
using fusion_test::run_twice;

struct Grads {
  Tensor x, w, b, y;  // y: the forward's output, held so that its kernel runs
};

struct Opts {
  bool weight = true, bias = true;
  DType dtype = kF32;
  double offset = 0;  // added to x: a mean far from 0 (the one-pass identity's hard case)
  double tol = 1e-4;
};

template <class F>
void check(const char* what, F&& fn, const Opts& o, int64_t kernels, int64_t eager = 0) {
  WaitForKernels wait;
  manual_seed(21);
  Tensor xf = (randn({8, 16, 32}) + o.offset).to(o.dtype), wf = randn({32}).to(o.dtype),
         bf = randn({32}).to(o.dtype), gf = randn({8, 16, 32}).to(o.dtype);
  auto grads = [&](Device d) {
    Tensor x = xf.to(d).requires_grad_(), w = wf.to(d).requires_grad_(),
           b = bf.to(d).requires_grad_();
    Tensor y = fn(x, o.weight ? w : Tensor(), o.bias ? b : Tensor());
    Gradients g = y.backward({.grad_output = gf.to(d)});
    return Grads{x.grad(g), o.weight ? w.grad(g) : Tensor(), o.bias ? b.grad(g) : Tensor(), y};
  };
  const Grads want = grads(Device::flex().autodiff());
  Grads got;
  const fusion::Stats s = run_twice([&] { got = grads(Device::cpu().autodiff()); });
  EXPECT_EQ(s.fused_kernels, kernels) << what;
  EXPECT_EQ(s.eager_ops, eager) << what;
  auto close = [&](const Tensor& a, const Tensor& b) {
    return allclose(a.to(Device::flex()).to(kF64), b.to(kF64), o.tol, o.tol);
  };
  EXPECT_TRUE(close(got.x, want.x))
      << what << "\n" << amax((got.x.to(Device::flex()) - want.x).abs()).item<double>();
  if (o.weight) EXPECT_TRUE(close(got.w, want.w)) << what;
  if (o.bias) EXPECT_TRUE(close(got.b, want.b)) << what;
}

Tensor ln(const Tensor& x, const Tensor& w, const Tensor& b) {
  return layer_norm(x, {32}, w, b, 1e-5);
}
Tensor rms(const Tensor& x, const Tensor& w, const Tensor&) { return rms_norm(x, {32}, w, 1e-6); }

// Forward and backward: the norm; dx (with xhat beside it); one kernel for both affine
// gradients. (Before the backward was an op of its own: 6 kernels.)
TEST(NormBackward, LayerNormInputGradientIsOneKernel) {
  check("layer_norm", ln, {}, 3);
  check("layer_norm f64", ln, {.dtype = kF64, .tol = 1e-9}, 3);
  // Half types: the cotangent's upcast and the affine gradients' casts back are steps of their
  // own (the cast and g * xhat a kernel, the two column sums apart, two casts eager).
  check("layer_norm bf16", ln, {.dtype = kBF16, .tol = 2e-2}, 5, 2);
  check("layer_norm offset", ln, {.offset = 8, .tol = 1e-3}, 3);
  // No affine parameters: no xhat is written, no column sums run.
  check("layer_norm plain", ln, {.weight = false, .bias = false}, 2);
}

// The norm; dx with xhat; the weight's column sum. (Before: 4 kernels.)
TEST(NormBackward, RmsNorm) {
  check("rms_norm", rms, {.bias = false}, 3);
  check("rms_norm f16", rms, {.bias = false, .dtype = kF16, .tol = 2e-2}, 3, 1);
  check("rms_norm plain", rms, {.weight = false, .bias = false}, 2);
}

// The eager forms (flex and Device::cpu().eager()) compute the backward ops through their
// decompositions: what the VJP rules computed before, to the bit.
TEST(NormBackward, EagerBackwardOpsAreTheClosedForms) {
  manual_seed(23);
  const Tensor x = randn({4, 6, 10}), w = randn({10}), g = randn({4, 6, 10});
  Attrs a;
  a.ints = {10};
  a.f[0] = 1e-5;
  for (Device d : {Device::flex(), Device::cpu().eager()}) {
    const TensorList r = dispatch(OpId::layer_norm_backward, a, {x.to(d), w.to(d), g.to(d)});
    const Tensor xhat = layer_norm(x, {10}, Tensor(), Tensor(), 1e-5);
    const Tensor rstd = rsqrt(var(x, {2}, 0, true) + 1e-5);
    const Tensor gy = g * w;
    const Tensor dx = rstd * addcmul(gy - mean(gy, {2}, true), xhat, mean(gy * xhat, {2}, true), -1);
    EXPECT_TRUE(allclose(r[0].to(Device::flex()), dx, 1e-6, 1e-6));
    EXPECT_TRUE(allclose(r[1].to(Device::flex()), xhat, 1e-6, 1e-6));
  }
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

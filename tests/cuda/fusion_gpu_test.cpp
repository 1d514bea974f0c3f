// The fusion layer on a GPU: Device::cuda(0) is lazy, its elementwise chains,
// reductions, softmax, norms and in-place copies run as fused kernels rendered
// in CUDA C and compiled by NVRTC, and they agree with the cpu. Every test
// skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ember/cuda.h"
#include "ember/ember.h"
#include "ember/fusion.h"
#include "fusion/programs.h"

namespace ember {
namespace {

#define EMBER_NEED_GPU() \
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU"

Device gpu() { return Device::cuda(0); }

// Within `tol` relative (1 + |want|), NaN equal to NaN, infinities exact.
void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> a = got.to(Device::flex()).to(kF64).to_vector<double>();
  const std::vector<double> b = want.to(Device::flex()).to(kF64).to_vector<double>();
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::isinf(a[i]) || std::isinf(b[i])
            ? a[i] != b[i]
            : !(std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i])))) {
      if (bad++ < 3) ADD_FAILURE() << what << " at " << i << ": " << a[i] << " vs " << b[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

struct Wait {
  Wait() { fusion::set_wait_for_kernels(true); }
  ~Wait() { fusion::set_wait_for_kernels(false); }
};

TEST(CudaFusion, DeviceIsLazyAndChainsFuseIntoOneKernel) {
  EMBER_NEED_GPU();
  EXPECT_TRUE(gpu().is_lazy());
  EXPECT_FALSE(gpu().eager().is_lazy());
  manual_seed(1);
  Tensor xc = randn({1000, 333}), wc = randn({1000, 333});
  Tensor x = xc.to(gpu()), w = wc.to(gpu());
  fusion::reset_stats();
  Tensor y = (gelu(x * w + 1.0) * sigmoid(x) - w * 0.5).relu();
  synchronize(gpu());
  EXPECT_EQ(fusion::stats().fused_kernels, 1);
  expect_close(y, (gelu(xc * wc + 1.0) * sigmoid(xc) - wc * 0.5).relu(), 1e-5, "gelu chain");
  // Broadcasts, a transposed view and mixed dtypes.
  Tensor b = randn({333}).to(gpu());
  Tensor z = (x.t().contiguous().t() + b).to(kF64) * 3 - x.to(kF16).to(kF32).to(kF64);
  expect_close(z, (xc + b.to(Device::flex())).to(kF64) * 3 - xc.to(kF16).to(kF32).to(kF64), 1e-6,
               "views");
}

TEST(CudaFusion, ReductionsSoftmaxAndNormsMatchCpu) {
  EMBER_NEED_GPU();
  Wait wait;
  manual_seed(2);
  for (const Shape& s : {Shape{64, 4096}, Shape{257, 100}, Shape{8, 3, 33}, Shape{1 << 20}}) {
    Tensor xc = randn(s);
    Tensor x = xc.to(gpu());
    const std::string at = shape_str(s);
    expect_close(x.sum(), xc.sum(), 1e-4, "sum " + at);
    expect_close(sum(x, {-1}), sum(xc, {-1}), 1e-5, "sum(-1) " + at);
    expect_close(sum(x, {0}), sum(xc, {0}), 1e-5, "sum(0) " + at);
    expect_close(mean(x * 2, {-1}, true), mean(xc * 2, {-1}, true), 1e-5, "mean " + at);
    expect_close(amax(x, {-1}), amax(xc, {-1}), 0, "amax " + at);
    expect_close(amin(x, {0}), amin(xc, {0}), 0, "amin " + at);
    expect_close(softmax(x * 3, -1), softmax(xc * 3, -1), 1e-5, "softmax " + at);
    expect_close(log_softmax(x, 0), log_softmax(xc, 0), 1e-5, "log_softmax(0) " + at);
    Tensor wn = randn({s.back()}), bn = randn({s.back()});
    expect_close(layer_norm(x + 1, {s.back()}, wn.to(gpu()), bn.to(gpu())),
                 layer_norm(xc + 1, {s.back()}, wn, bn), 1e-4, "layer_norm " + at);
    expect_close(rms_norm(x, {s.back()}, wn.to(gpu())), rms_norm(xc, {s.back()}, wn), 1e-4,
                 "rms_norm " + at);
  }
}

// Reductions over a long leading dim into few outputs (a bias's gradient: 768 sums of 8192)
// split each column over the planes of a workgroup (row_reduce.h, gpu_cols): every combiner,
// with a prologue, partial last blocks, broadcast operands and half-precision inputs.
TEST(CudaFusion, FewLongColumnsSplitAcrossThreads) {
  EMBER_NEED_GPU();
  Wait wait;
  manual_seed(4);
  for (const Shape& s : {Shape{8192, 768}, Shape{4096, 100}, Shape{300, 7, 45}, Shape{2048, 3, 5}}) {
    const std::string at = shape_str(s);
    Tensor ac = randn(s), bc = randn(s);
    Tensor a = ac.to(gpu()), b = bc.to(gpu());
    // f32 sums of up to 8192 terms in another order: rounding of ~sqrt(n) * eps * |terms|.
    expect_close(sum(a, {0}), sum(ac, {0}), 2e-4, "sum(0) " + at);
    expect_close(sum(a * b + 1.0, {0}, true), sum(ac * bc + 1.0, {0}, true), 2e-4, "sum(a*b) " + at);
    expect_close(mean(a, {0}), mean(ac, {0}), 2e-5, "mean " + at);
    expect_close(var(a, {0}), var(ac, {0}), 1e-4, "var " + at);
    expect_close(amax(a, {0}), amax(ac, {0}), 0, "amax " + at);
    expect_close(amin(b, {0}), amin(bc, {0}), 0, "amin " + at);
    expect_close(argmax(a, 0), argmax(ac, 0), 0, "argmax " + at);
    expect_close(sum(a.to(kBF16), {0}).to(kF32), sum(ac.to(kBF16), {0}).to(kF32), 2e-2, "bf16 " + at);
    Tensor row = randn({s.back()});
    expect_close(sum(a * row.to(gpu()), {0}), sum(ac * row, {0}), 2e-4, "broadcast " + at);
  }
}

TEST(CudaFusion, InPlaceCopiesAndHalfPrecision) {
  EMBER_NEED_GPU();
  manual_seed(3);
  Tensor xc = randn({128, 64});
  Tensor x = xc.to(gpu());
  Tensor dst = zeros({64, 128}, {.device = gpu()});
  dst.t().copy_(x * 2 + 1);
  expect_close(dst, (xc * 2 + 1).t(), 0, "copy into a transposed view");
  for (DType d : {kF16, kBF16}) {
    Tensor h = x.to(d);
    expect_close((h * h + h).to(kF32), (xc.to(d) * xc.to(d) + xc.to(d)).to(kF32), 0,
                 "16-bit chain");
    expect_close(softmax(h, -1).to(kF32), softmax(xc.to(d), -1).to(kF32), 1e-2, "16-bit softmax");
  }
}

// The property tests' programs on the GPU against the cpu: exact programs (one
// rounding per op, the IR's integer and cast rules) bitwise, smooth ones and
// reductions within 1e-4.
void check_programs(uint32_t first, uint32_t count, bool smooth) {
  Wait wait;
  int64_t fused = 0;
  for (uint32_t seed = first; seed < first + count; ++seed) {
    std::string text;
    fusion::reset_stats();
    const std::vector<Tensor> got = fusion_test::run(seed, gpu(), smooth, &text);
    synchronize(gpu());
    fused += fusion::stats().fused_kernels;
    const std::vector<Tensor> want = fusion_test::run(seed, Device::cpu().eager(), smooth, nullptr);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", value " + std::to_string(i) + ":" + text);
      const Tensor g = got[i].to(Device::cpu().eager());
      if (!smooth)
        EXPECT_TRUE(fusion_test::same(g, want[i])) << g << "\n" << want[i];
      else
        EXPECT_TRUE(fusion_test::close(g, want[i], 1e-4)) << g << "\n" << want[i];
    }
  }
  EXPECT_GT(fused, int64_t(count) / 2);
}
TEST(CudaFusion, ExactProgramsAreBitwiseEqualToCpu) {
  EMBER_NEED_GPU();
  check_programs(1, 60, false);
}
TEST(CudaFusion, SmoothProgramsWithReductionsMatchCpu) {
  EMBER_NEED_GPU();
  check_programs(1000, 60, true);
}

TEST(CudaFusion, KernelCountsAndPlanReuse) {
  EMBER_NEED_GPU();
  Wait wait;
  manual_seed(4);
  Tensor x = randn({8, 64, 128}).to(gpu()), r = randn({8, 64, 128}).to(gpu());
  Tensor w = ones({128}, {.device = gpu()}), b = zeros({128}, {.device = gpu()});
  auto step = [&] {
    Tensor h = layer_norm(x + r, {128}, w, b);
    Tensor s = softmax(h * 0.125, -1);
    return sum(s * h, {-1});
  };
  Tensor warm = step();  // held, as `out` is below: the same plan
  synchronize(gpu());
  fusion::reset_stats();
  Tensor out = step();
  synchronize(gpu());
  const fusion::Stats s = fusion::stats();
  EXPECT_EQ(s.plan_misses, 0);
  // The add is the norm's prologue, the scale the softmax's, the product the
  // sum's: 3 kernels.
  EXPECT_EQ(s.fused_kernels, 3);
  EXPECT_EQ(s.eager_ops, 0);
}

TEST(CudaFusion, EagerDeviceRunsEachOpAsItsOwnKernel) {
  EMBER_NEED_GPU();
  manual_seed(5);
  Tensor xc = randn({4096});
  Tensor x = xc.to(gpu().eager());
  Tensor y = exp(x) + x;
  expect_close(y, exp(xc) + xc, 1e-6, "eager ops");
  expect_close(softmax(x, 0), softmax(xc, 0), 1e-6, "eager softmax");
}

}  // namespace
}  // namespace ember

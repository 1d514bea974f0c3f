// cuDNN's convolutions, pooling and batch norm on cuda:0 against the host (flex at float64):
// forward at f32/f16/bf16 over strides, padding, dilation, groups, odd sizes, channels-last
// inputs; gradients (conv_input_grad and conv_weight_grad run as cuDNN's backward data and
// filter) against the host's through autodiff. The PyTorch goldens of the same ops run on
// cuda:0 too (Golden/*_cuda0). CudaCudnnOff runs in a process with EMBER_CUDNN=0 (its own ctest
// entries): the ops fall back to the host, or, with EMBER_CUDA_FALLBACK=error, say why.
#include <cstdlib>

#include "cuda/cuda_util.h"
#include "fusion/convnet_step.h"
#include "ember/backends/cuda/cudnn_ops.h"

namespace ember {
namespace {

using testing::rel_error;
using testing::scaled_error;
using fusion_test::convnet_step;
using fusion_test::norm2;

double tol(DType t) { return t == kF32 ? 1e-5 : t == kF16 ? 3e-3 : 2e-2; }
const Device kHost = Device::flex();

bool cudnn_off_env() {
  const char* e = std::getenv("EMBER_CUDNN");
  return e && std::string(e) == "0";
}

#define EMBER_REQUIRE_CUDNN()                                                         \
  do {                                                                                \
    EMBER_REQUIRE_GPU();                                                              \
    if (!cuda::cudnn_loaded()) GTEST_SKIP() << cuda::cudnn_missing_reason();          \
  } while (0)

struct ConvCase {
  Shape x, w;
  ConvOptions o;
  bool bias;
};

Tensor conv_nd(const Tensor& x, const Tensor& w, const Tensor& b, const ConvOptions& o) {
  const int64_t nsp = w.dim() - 2;
  return nsp == 1 ? conv1d(x, w, b, o) : nsp == 2 ? conv2d(x, w, b, o) : conv3d(x, w, b, o);
}

std::vector<ConvCase> conv_cases() {
  return {
      {{2, 3, 9, 7}, {4, 3, 3, 3}, {.padding = {1}}, true},
      {{2, 4, 11, 10}, {6, 2, 3, 2}, {.stride = {2}, .padding = {1}, .groups = 2}, true},
      {{1, 3, 13, 9}, {5, 3, 3, 3}, {.stride = {2, 1}, .padding = {2}, .dilation = {2}}, false},
      {{3, 8, 7, 7}, {8, 1, 5, 5}, {.padding = {2}, .groups = 8}, true},  // depthwise
      {{2, 5, 6, 6}, {7, 5, 1, 1}, {}, true},
      {{3, 7, 6}, {2, 3, 3, 3}, {.padding = {1}}, true},  // unbatched (3 channels, 7x6)
      {{2, 4, 17}, {6, 2, 5}, {.stride = {3}, .padding = {2}, .dilation = {2}, .groups = 2}, true},
      {{1, 2, 5, 6, 7}, {3, 2, 3, 2, 3}, {.stride = {2}, .padding = {1}}, true},
  };
}

TEST(CudaCudnn, ConvolutionsMatchTheHost) {
  EMBER_REQUIRE_CUDNN();
  const Device g = Device::cuda(0);
  const auto before = cuda::cudnn_stats();
  for (DType t : {kF32, kF16, kBF16})
    for (const ConvCase& c : conv_cases()) {
      Tensor x = randn(c.x).to(t), w = randn(c.w).to(t);
      Tensor b = c.bias ? randn({c.w[0]}).to(t) : Tensor();
      Tensor ref = conv_nd(x.to(kF64), w.to(kF64), c.bias ? b.to(kF64) : Tensor(), c.o);
      Tensor got = conv_nd(x.to(g), w.to(g), c.bias ? b.to(g) : Tensor(), c.o);
      EXPECT_EQ(got.device(), g);
      EXPECT_EQ(got.shape(), ref.shape());
      EXPECT_LT(rel_error(got, ref), tol(t)) << dtype_name(t) << " x " << shape_str(c.x);
    }
  EXPECT_GE(cuda::cudnn_stats().served - before.served, 3 * int64_t(conv_cases().size()));
}

TEST(CudaCudnn, TransposedConvolutionsMatchTheHost) {
  EMBER_REQUIRE_CUDNN();
  const Device g = Device::cuda(0);
  const auto before = cuda::cudnn_stats();
  for (DType t : {kF32, kBF16}) {
    Tensor x = randn({2, 4, 5, 6}).to(t), w = randn({4, 3, 3, 3}).to(t), b = randn({6}).to(t);
    ConvTransposeOptions o{.stride = {2}, .padding = {1}, .output_padding = {1}, .groups = 2};
    Tensor w2 = randn({4, 3, 3, 3}).to(t);
    Tensor ref = conv_transpose2d(x.to(kF64), w2.to(kF64), b.to(kF64), o);
    EXPECT_LT(rel_error(conv_transpose2d(x.to(g), w2.to(g), b.to(g), o), ref), tol(t));
    Tensor x1 = randn({3, 4, 9}).to(t), w1 = randn({4, 2, 4}).to(t);
    ConvTransposeOptions o1{.stride = {3}, .padding = {1}, .dilation = {2}};
    EXPECT_LT(rel_error(conv_transpose1d(x1.to(g), w1.to(g), Tensor(), o1),
                        conv_transpose1d(x1.to(kF64), w1.to(kF64), Tensor(), o1)),
              tol(t));
    (void)w;
  }
  EXPECT_GE(cuda::cudnn_stats().served - before.served, 4);
}

TEST(CudaCudnn, ChannelsLastInputsAndPlanCache) {
  EMBER_REQUIRE_CUDNN();
  const Device g = Device::cuda(0);
  Tensor x = randn({2, 16, 9, 11}), w = randn({8, 16, 3, 3}), b = randn({8});
  Tensor ref = conv2d(x.to(kF64), w.to(kF64), b.to(kF64), {.padding = {1}});
  Tensor xl = x.to(g).permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});  // NHWC memory
  ASSERT_FALSE(xl.is_contiguous());
  Tensor got = conv2d(xl, w.to(g), b.to(g), {.padding = {1}});
  EXPECT_LT(rel_error(got, ref), 1e-5);
  EXPECT_TRUE(got.permute({0, 2, 3, 1}).is_contiguous());  // the result stays channels-last
  const auto s0 = cuda::cudnn_stats();
  (void)conv2d(xl, w.to(g), b.to(g), {.padding = {1}}).to(kHost);
  EXPECT_EQ(cuda::cudnn_stats().plans, s0.plans);
  EXPECT_GT(cuda::cudnn_stats().plan_hits, s0.plan_hits);
}

// The gradients of sum(conv(x, w, b) * r) on cuda:0 against float64 on the host.
TEST(CudaCudnn, ConvolutionGradientsMatchTheHost) {
  EMBER_REQUIRE_CUDNN();
  const Device g = Device::cuda(0).autodiff(), h = Device::flex().autodiff();
  for (DType t : {kF32, kBF16})
    for (const ConvCase& c : conv_cases()) {
      Tensor x0 = randn(c.x).to(t), w0 = randn(c.w).to(t), b0 = randn({c.w[0]}).to(t);
      auto grads = [&](Device d, DType dt) {
        Tensor x = x0.to(dt).to(d).set_requires_grad(true);
        Tensor w = w0.to(dt).to(d).set_requires_grad(true);
        Tensor b = b0.to(dt).to(d).set_requires_grad(true);
        Tensor y = conv_nd(x, w, c.bias ? b : Tensor(), c.o);
        // One set of weights for both runs: rounded to the tested dtype first.
        Tensor r = cos(arange(y.numel(), {kF64})).reshape(y.shape()).to(t).to(dt).to(d);
        Gradients gr = (y * r).sum().backward();
        return std::vector<Tensor>{gr.get(x), gr.get(w), c.bias ? gr.get(b) : Tensor()};
      };
      const auto before = cuda::cudnn_stats();
      auto got = grads(g, t), want = grads(h, kF64);
      const double tl = t == kF32 ? 1e-5 : 3e-2;
      EXPECT_LT(rel_error(got[0], want[0]), tl) << "input grad " << dtype_name(t) << shape_str(c.x);
      EXPECT_LT(rel_error(got[1], want[1]), tl) << "weight grad " << dtype_name(t) << shape_str(c.x);
      // sum(r) over batch and positions: the terms cancel up to ~500x (the cpu's f32 error is
      // < 1e-6), hence a looser f32 bound; a zero or garbage sum still fails.
      if (c.bias)
        EXPECT_LT(rel_error(got[2], want[2]), t == kF32 ? 1e-4 : tl)
            << "bias grad " << dtype_name(t) << shape_str(c.x);
      EXPECT_GE(cuda::cudnn_stats().served - before.served, 3) << shape_str(c.x);
    }
}

TEST(CudaCudnn, PoolingMatchesTheHost) {
  EMBER_REQUIRE_CUDNN();
  const Device g = Device::cuda(0);
  const auto before = cuda::cudnn_stats();
  for (DType t : {kF32, kF16, kBF16}) {
    Tensor x = randn({2, 3, 11, 9}).to(t), x1 = randn({2, 5, 13}).to(t);
    const PoolOptions cases[] = {{.kernel_size = {3}, .stride = {2}, .padding = {1}},
                                 {.kernel_size = {2}},
                                 {.kernel_size = {3, 2}, .stride = {1, 2}, .padding = {1, 0}},
                                 {.kernel_size = {3}, .stride = {2}, .padding = {1},
                                  .count_include_pad = false}};
    for (const PoolOptions& o : cases) {
      EXPECT_EQ(rel_error(max_pool2d(x.to(g), o), max_pool2d(x.to(kF64), o)), 0.0);
      EXPECT_LT(rel_error(avg_pool2d(x.to(g), o), avg_pool2d(x.to(kF64), o)), tol(t));
    }
    const PoolOptions o1{.kernel_size = {4}, .stride = {3}, .padding = {2}};
    EXPECT_EQ(rel_error(max_pool1d(x1.to(g), o1), max_pool1d(x1.to(kF64), o1)), 0.0);
    EXPECT_LT(rel_error(avg_pool1d(x1.to(g), o1), avg_pool1d(x1.to(kF64), o1)), tol(t));
    // ceil_mode and dilation: the host fallback, same results.
    const PoolOptions ceil{.kernel_size = {2}, .stride = {2}, .ceil_mode = true};
    EXPECT_EQ(rel_error(max_pool2d(x.to(g), ceil), max_pool2d(x.to(kF64), ceil)), 0.0);
  }
  EXPECT_GE(cuda::cudnn_stats().served - before.served, 30);
}

TEST(CudaCudnn, BatchNormMatchesTheHost) {
  EMBER_REQUIRE_CUDNN();
  const Device g = Device::cuda(0);
  for (DType t : {kF32, kF16, kBF16})
    for (Shape s : {Shape{4, 3, 5, 7}, Shape{6, 5}, Shape{3, 4, 9}, Shape{2, 3, 3, 4, 5}}) {
      const int64_t c = s[1];
      Tensor x = (randn(s) * 2 + 1).to(t), w = randn({c}).to(t), b = randn({c}).to(t);
      Tensor rm = randn({c}).to(t), rv = (rand({c}) + 0.5).to(t);
      // Training: normalised output and the running statistics' update.
      Tensor rm_g = rm.to(g).clone(), rv_g = rv.to(g).clone();
      Tensor rm_h = rm.to(kF64), rv_h = rv.to(kF64);
      Tensor yg = batch_norm(x.to(g), rm_g, rv_g, w.to(g), b.to(g), true, 0.1, 1e-5);
      Tensor yh = batch_norm(x.to(kF64), rm_h, rv_h, w.to(kF64), b.to(kF64), true, 0.1, 1e-5);
      EXPECT_LT(rel_error(yg, yh), tol(t) * 3) << dtype_name(t) << shape_str(s);
      EXPECT_LT(rel_error(rm_g, rm_h), tol(t) * 3) << shape_str(s);
      EXPECT_LT(rel_error(rv_g, rv_h), tol(t) * 3) << shape_str(s);
      // Evaluation, with and without the affine part.
      EXPECT_LT(rel_error(batch_norm(x.to(g), rm.to(g), rv.to(g), w.to(g), b.to(g), false, 0.1, 1e-5),
                          batch_norm(x.to(kF64), rm.to(kF64), rv.to(kF64), w.to(kF64), b.to(kF64),
                                     false, 0.1, 1e-5)),
                tol(t) * 3);
      EXPECT_LT(rel_error(batch_norm(x.to(g), rm.to(g), rv.to(g), Tensor(), Tensor(), false, 0.1, 1e-3),
                          batch_norm(x.to(kF64), rm.to(kF64), rv.to(kF64), Tensor(), Tensor(),
                                     false, 0.1, 1e-3)),
                tol(t) * 3);
    }
}

// Training-mode batch norm's backward runs as one cuDNN call on cuda (ember/ops/norm_route.h):
// the input's, weight's and bias's gradients against the host's closed form at float64, with
// and without the affine part, over 0 to 3 spatial dims; under create_graph the closed form
// runs instead, so a second derivative still exists.
TEST(CudaCudnn, BatchNormBackwardMatchesTheHost) {
  EMBER_REQUIRE_CUDNN();
  const Device g = Device::cuda(0).autodiff(), h = kHost.autodiff();
  for (DType t : {kF32, kF16, kBF16})
    for (Shape s : {Shape{4, 3, 5, 7}, Shape{6, 5}, Shape{3, 4, 9}, Shape{2, 3, 3, 4, 5}})
      for (bool affine : {true, false}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + shape_str(s) + (affine ? " affine" : ""));
        const int64_t c = s[1];
        const Tensor x0 = (randn(s) * 2 + 1).to(t), r0 = randn(s).to(t);
        const Tensor w0 = (rand({c}) + 0.5).to(t), b0 = randn({c}).to(t);
        auto grads = [&](Device d, DType dt) {
          Tensor x = x0.to(dt).to(d).set_requires_grad(true);
          Tensor w = w0.to(dt).to(d).set_requires_grad(true);
          Tensor b = b0.to(dt).to(d).set_requires_grad(true);
          Tensor rm = zeros({c}, {dt, d.without_layers()}), rv = ones({c}, {dt, d.without_layers()});
          Tensor y = affine ? batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5)
                            : batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1, 1e-5);
          Gradients gr = (y * r0.to(dt).to(d)).sum().backward({.accumulate_grad = false});
          return affine ? TensorList{gr.get(x), gr.get(w), gr.get(b)} : TensorList{gr.get(x)};
        };
        const auto before = cuda::cudnn_stats();
        const TensorList got = grads(g, t), want = grads(h, kF64);
        EXPECT_GT(cuda::cudnn_stats().served, before.served);
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_LT(rel_error(got[i], want[i]), tol(t) * 10) << i;
      }
  // Second order: d/dx of sum(dL/dx * v) through create_graph.
  auto second = [](Device d, DType dt) {
    manual_seed(5);
    Tensor x = randn({4, 3, 5, 5}).to(dt).to(d).set_requires_grad(true);
    Tensor r = randn({4, 3, 5, 5}).to(dt).to(d), v = randn({4, 3, 5, 5}).to(dt).to(d);
    Tensor rm = zeros({3}, {dt, d.without_layers()}), rv = ones({3}, {dt, d.without_layers()});
    Tensor y = batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1, 1e-5);
    Gradients g1 = (y * r).sum().backward({.create_graph = true, .accumulate_grad = false});
    return (g1.get(x) * v).sum().backward({.accumulate_grad = false}).get(x);
  };
  EXPECT_LT(rel_error(second(g, kF32), second(h, kF64)), 1e-4);
}

// adaptive_avg_pool1d/2d whose output size divides the input's run cuDNN's average pooling;
// other sizes still run (the host), with the same values; gradients too.
TEST(CudaCudnn, AdaptiveAveragePoolingMatchesTheHost) {
  EMBER_REQUIRE_CUDNN();
  const Device g = Device::cuda(0);
  for (DType t : {kF32, kF16, kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = randn({2, 5, 8, 9}).to(t);
    for (Shape os : {Shape{1, 1}, Shape{2, 3}, Shape{4, 9}, Shape{3, 5}}) {
      cuda::reset_fallback_stats();
      EXPECT_LT(rel_error(adaptive_avg_pool2d(x.to(g), os), adaptive_avg_pool2d(x.to(kF64), os)),
                tol(t) * 3) << shape_str(os);
      const bool divides = 8 % os[0] == 0 && 9 % os[1] == 0;
      EXPECT_EQ(cuda::fallback_stats().empty(), divides) << shape_str(os);
    }
    const Tensor x1 = randn({3, 4, 12}).to(t);
    EXPECT_LT(rel_error(adaptive_avg_pool1d(x1.to(g), 3), adaptive_avg_pool1d(x1.to(kF64), 3)),
              tol(t) * 3);
  }
  Tensor xg = randn({2, 4, 6, 6}).to(Device::cuda(0).autodiff()).set_requires_grad(true);
  Tensor xh = xg.detach().to(kHost.autodiff()).to(kF64).set_requires_grad(true);
  auto loss = [](const Tensor& x) {
    const Tensor p = adaptive_avg_pool2d(x, {1, 1}) * 3;
    return (p * p).sum();
  };
  EXPECT_LT(rel_error(loss(xg).backward().get(xg), loss(xh).backward().get(xh)), 1e-5);
}

// Every gradient and the running variance, but the first convolution's bias (below).
TEST(CudaCudnn, ConvnetGradientsMatchTheHost) {
  EMBER_REQUIRE_CUDNN();
  auto got = convnet_step(Device::cuda(0).autodiff(), kF32);
  auto want = convnet_step(Device::flex().autodiff(), kF64);
  for (size_t i = 0; i < got.size(); ++i)
    if (i != 1) EXPECT_LT(rel_error(got[i], want[i]), 1e-4) << i;
}

// The first convolution's bias feeds a training-mode batch norm, which subtracts the batch mean:
// its gradient, sum(g, {0, 2, 3}) of batch norm's input gradient, is zero (float64: ~1e-17), so
// an f32 result is rounding noise of the terms summed (~5e-8 on the cpu and on flex) and its
// rel_error against float64 is ~1e9 on every device. It is measured against the size of those
// terms instead, for which the weight gradient of the same convolution (read from the same g)
// stands: a kernel that computes garbage still fails by orders of magnitude.
TEST(CudaCudnn, ConvnetBiasGradientThroughBatchNormIsZero) {
  EMBER_REQUIRE_CUDNN();
  auto got = convnet_step(Device::cuda(0).autodiff(), kF32);
  auto want = convnet_step(Device::flex().autodiff(), kF64);
  const double scale = norm2(want[0]);
  EXPECT_LT(norm2(want[1]), 1e-12 * scale);
  EXPECT_LT(scaled_error(got[1], want[1], scale), 1e-5);
}

// Runs only with EMBER_CUDNN=0 in the environment (the ctest entries cuda_no_cudnn*).
TEST(CudaCudnnOff, OpsFallBackToTheHost) {
  EMBER_REQUIRE_GPU();
  if (!cudnn_off_env()) GTEST_SKIP() << "set EMBER_CUDNN=0 to run";
  EXPECT_FALSE(cuda::cudnn_loaded());
  EXPECT_NE(cuda::cudnn_missing_reason().find("EMBER_CUDNN=0"), std::string::npos);
  const Device g = Device::cuda(0);
  Tensor x = randn({2, 3, 8, 8}), w = randn({4, 3, 3, 3});
  const char* fb = std::getenv("EMBER_CUDA_FALLBACK");
  if (fb && std::string(fb) == "error") {
    try {
      (void)conv2d(x.to(g), w.to(g), Tensor(), {.padding = {1}}).to(kHost);
      FAIL() << "expected NotImplementedError";
    } catch (const NotImplementedError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("[conv2d]"), std::string::npos) << m;
      EXPECT_NE(m.find("cuDNN not found"), std::string::npos) << m;
    }
    return;
  }
  cuda::reset_fallback_stats();
  Tensor got = conv2d(x.to(g), w.to(g), Tensor(), {.padding = {1}});
  EXPECT_EQ(got.device(), g);
  EXPECT_LT(rel_error(got, conv2d(x.to(kF64), w.to(kF64), Tensor(), {.padding = {1}})), 1e-5);
  EXPECT_LT(rel_error(max_pool2d(x.to(g), {.kernel_size = {2}}),
                      max_pool2d(x, {.kernel_size = {2}})), 1e-6);
  bool counted = false;
  for (const auto& [op, n] : cuda::fallback_stats()) counted = counted || (op == "conv2d" && n > 0);
  EXPECT_TRUE(counted);
  // Gradients still work: conv_input_grad / conv_weight_grad run their decompositions.
  Tensor xg = x.to(Device::cuda(0).autodiff()).set_requires_grad(true);
  Gradients gr = conv2d(xg, w.to(g), Tensor(), {.padding = {1}}).sum().backward();
  Tensor xh = x.to(Device::flex().autodiff()).set_requires_grad(true);
  Gradients gh = conv2d(xh, w, Tensor(), {.padding = {1}}).sum().backward();
  EXPECT_LT(rel_error(gr.get(xg), gh.get(xh)), 1e-5);
}

}  // namespace
}  // namespace ember

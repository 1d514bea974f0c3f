// GPU workloads: the rows of ../shared/peers/torch_gpu.py, sized for an H200 and run only on
// `--device cuda` (or cuda_eager). scripts/gpu-check.sh runs them beside the peer in one call
// and prints the ratios. Each timed sample runs `reps` calls between two synchronisations, so a
// row measures launches and device work, as the peer's CUDA events do, not a host round trip.
// Inputs are random (never zeros: they hide unwritten outputs and run faster than real data).
#include "bench.h"
#include "ember/ember.h"

namespace {
using namespace ember;

bench::Workload gemm(DType dt, int64_t n, const char* name) {
  return {.name = name,
          .setup =
              [dt, n] {
                Tensor a = randn({n, n}).to(dt), b = randn({n, n}).to(dt);
                return std::function<void()>([=] { bench::keep(matmul(a, b)); });
              },
          .warmup = 3,
          .iters = 10,
          .flops = 2.0 * double(n) * double(n) * double(n),
          .gpu = true,
          .reps = 5};
}
}  // namespace

static ember::bench::Register gemm_f32(gemm(ember::DType::F32, 4096, "gemm_float32_4096"));
static ember::bench::Register gemm_bf16(gemm(ember::DType::BF16, 8192, "gemm_bfloat16_8192"));
static ember::bench::Register gemm_f16(gemm(ember::DType::F16, 8192, "gemm_float16_8192"));

EMBER_BENCH({.name = "copy_1GiB",
             .setup =
                 [] {
                   Tensor x = randn({int64_t(1) << 28});
                   return std::function<void()>([=] { bench::keep(x.clone()); });
                 },
             .gpu = true,
             .reps = 5});
// The peer's elementwise_chain_64M rows: eager PyTorch runs one kernel per op, torch.compile one.
EMBER_BENCH({.name = "elementwise_chain_64M",
             .setup =
                 [] {
                   Tensor x = randn({int64_t(1) << 26}), w = randn({int64_t(1) << 26});
                   return std::function<void()>(
                       [=] { bench::keep((gelu(x * w + 1.0) * sigmoid(x) - w * 0.5).relu()); });
                 },
             .gpu = true,
             .reps = 10});
EMBER_BENCH({.name = "softmax_8192x4096",
             .setup =
                 [] {
                   Tensor x = randn({8192, 4096});
                   return std::function<void()>([=] { bench::keep(softmax(x, -1)); });
                 },
             .gpu = true,
             .reps = 10});
EMBER_BENCH({.name = "layernorm_8192x4096",
             .setup =
                 [] {
                   auto ln = std::make_shared<nn::LayerNorm>(nn::LayerNormOptions{.shape = {4096}});
                   Tensor x = randn({8192, 4096});
                   return std::function<void()>([=] {
                     NoGradGuard ng;
                     bench::keep((*ln)(x));
                   });
                 },
             .gpu = true,
             .reps = 10});
EMBER_BENCH({.name = "sum_rows_8192x4096",
             .setup =
                 [] {
                   Tensor x = randn({8192, 4096});
                   return std::function<void()>([=] { bench::keep(x.sum({-1})); });
                 },
             .gpu = true,
             .reps = 10});
EMBER_BENCH({.name = "conv3x3_64c_56_b64_f32",
             .setup =
                 [] {
                   auto conv = std::make_shared<nn::Conv2d>(
                       nn::ConvOptions{.in = 64, .out = 64, .kernel = 3, .padding = 1});
                   Tensor x = randn({64, 64, 56, 56});
                   return std::function<void()>([=] {
                     NoGradGuard ng;
                     bench::keep((*conv)(x));
                   });
                 },
             .flops = 2.0 * 64 * 64 * 9 * 56 * 56 * 64,
             .gpu = true,
             .reps = 5});
// The same convolution's training step: forward, then the input and weight gradients (cuDNN's
// backward data and filter on cuda) and the bias gradient; in f32, and under bf16 mixed precision
// (f32 tensors cast to bf16 for cuDNN's bf16 kernels; beside bench/peers/torch_amp_peer.py).
static std::function<void()> conv_train_step(Device d) {
  Tensor x = randn({64, 64, 56, 56}).to(d).set_requires_grad(true);
  Tensor w = (randn({64, 64, 3, 3}) * 0.05).to(d).set_requires_grad(true);
  Tensor b = zeros({64}).to(d).set_requires_grad(true);
  return [=] {
    Gradients g = conv2d(x, w, b, {.padding = {1}}).sum().backward({.accumulate_grad = false});
    bench::keep(g.get(w));
    bench::keep(g.get(x));
  };
}
EMBER_BENCH({.name = "conv3x3_64c_56_b64_f32_fwd_bwd",
             .setup = [] { return conv_train_step(default_device().autodiff()); },
             .flops = 3 * 2.0 * 64 * 64 * 9 * 56 * 56 * 64,
             .gpu = true,
             .reps = 5});
EMBER_BENCH({.name = "conv3x3_64c_56_b64_bf16_fwd_bwd",
             .setup =
                 [] { return conv_train_step(default_device().autodiff().mixed_precision(kBF16)); },
             .flops = 3 * 2.0 * 64 * 64 * 9 * 56 * 56 * 64,
             .gpu = true,
             .reps = 5});
// A tiny op's launch cost is bench/elementwise.cpp's tiny_add_dispatch (1000 adds), which runs on
// every device.

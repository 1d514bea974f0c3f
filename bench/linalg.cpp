// Matrix-product and convolution workloads (rows of torch_cpu.py).
#include <cmath>

#include "bench.h"
#include "ember/ember.h"

using namespace ember;

EMBER_BENCH({.name = "matmul_f32_1024", .setup = [] {
  Tensor a = randn({1024, 1024}), b = randn({1024, 1024});
  return std::function<void()>([=] { bench::keep(matmul(a, b)); });
}, .flops = 2.0 * 1024 * 1024 * 1024, .suite = "matmul"});
EMBER_BENCH({.name = "matmul_f32_2048", .setup = [] {
  Tensor a = randn({2048, 2048}), b = randn({2048, 2048});
  return std::function<void()>([=] { bench::keep(matmul(a, b)); });
}, .flops = 2.0 * 2048 * 2048 * 2048, .suite = "matmul"});
EMBER_BENCH({.name = "conv3x3_64c_56_b32_fwd", .setup = [] {
  // nn.Conv2d(64, 64, 3, padding=1): weight and bias uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  double bound = 1.0 / std::sqrt(64.0 * 9.0);
  Tensor x = randn({32, 64, 56, 56}), w = uniform(-bound, bound, {64, 64, 3, 3}),
         b = uniform(-bound, bound, {64});
  return std::function<void()>([=] {
    bench::keep(nn::functional::conv2d(x, w, b, {.padding = {1}}));
  });
}, .warmup = 2, .iters = 5, .suite = "conv"});

// The same rows on the native cpu backend (oneDNN where the build has it), named for the device
// they run on, eager (each op runs when called, whether or not Device::cpu() queues work);
// bench/peers/gemm_peer.py times the libraries themselves (OpenBLAS, oneDNN's sgemm).
EMBER_BENCH({.name = "matmul_f32_1024@cpu", .setup = [] {
  const Device cpu = Device::cpu().eager();
  Tensor a = randn({1024, 1024}).to(cpu), b = randn({1024, 1024}).to(cpu);
  return std::function<void()>([=] { bench::keep(matmul(a, b)); });
}, .flops = 2.0 * 1024 * 1024 * 1024, .suite = "matmul"});
EMBER_BENCH({.name = "matmul_f32_2048@cpu", .setup = [] {
  const Device cpu = Device::cpu().eager();
  Tensor a = randn({2048, 2048}).to(cpu), b = randn({2048, 2048}).to(cpu);
  return std::function<void()>([=] { bench::keep(matmul(a, b)); });
}, .flops = 2.0 * 2048 * 2048 * 2048, .suite = "matmul"});
EMBER_BENCH({.name = "conv3x3_64c_56_b32_fwd@cpu", .setup = [] {
  double bound = 1.0 / std::sqrt(64.0 * 9.0);
  const Device cpu = Device::cpu().eager();
  Tensor x = randn({32, 64, 56, 56}).to(cpu), w = uniform(-bound, bound, {64, 64, 3, 3}).to(cpu),
         b = uniform(-bound, bound, {64}).to(cpu);
  return std::function<void()>([=] {
    Tensor y = nn::functional::conv2d(x, w, b, {.padding = {1}});
  });
}, .warmup = 2, .iters = 5, .flops = 2.0 * 32 * 64 * 64 * 9 * 56 * 56, .suite = "conv"});

// Decompositions (bench/peers/linalg_peer.py times torch.linalg's): f64, well conditioned, on the cpu
// backend (LAPACK) and on flex (its portable kernels).
namespace {
Tensor well_conditioned(int64_t n, Device d) {
  return (randn({n, n}, {.dtype = DType::F64}) + eye(n, {}, {.dtype = DType::F64}) * double(n)).to(d);
}
}  // namespace
EMBER_BENCH({.name = "linalg_solve_f64_1024@cpu", .setup = [] {
  const Device cpu = Device::cpu().eager();
  Tensor a = well_conditioned(1024, cpu), b = randn({1024, 1024}, {.dtype = DType::F64}).to(cpu);
  return std::function<void()>([=] { bench::keep(linalg::solve(a, b)); });
}, .warmup = 2, .iters = 7, .flops = 2.0 / 3 * 1024.0 * 1024 * 1024 + 2.0 * 1024.0 * 1024 * 1024});
EMBER_BENCH({.name = "linalg_svd_f64_512@cpu", .setup = [] {
  const Device cpu = Device::cpu().eager();
  Tensor a = randn({512, 512}, {.dtype = DType::F64}).to(cpu);
  return std::function<void()>([=] {
    auto [u, s, vh] = linalg::svd(a, false);
    bench::keep(u);
  });
}, .warmup = 2, .iters = 7});
EMBER_BENCH({.name = "linalg_solve_f64_1024@flex", .setup = [] {
  Tensor a = well_conditioned(1024, Device::flex()), b = randn({1024, 1024}, {.dtype = DType::F64});
  return std::function<void()>([=] { bench::keep(linalg::solve(a, b)); });
}, .warmup = 1, .iters = 3, .on_request = true});

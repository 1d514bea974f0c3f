// FFT workloads (bench/peers/fft_peer.py times torch.fft's, which runs pocketfft): rfft of
// 2^20 float64 samples (a half-length complex transform, six-step) and of the prime length
// 1,000,003 (Bluestein through a 2^21-point transform), one signal each; the transforms split
// their passes over the thread pool. flex and cpu run the same native kernels.
#include "bench.h"
#include "ember/ember.h"
#include "ember/fft.h"

using namespace ember;

EMBER_BENCH({.name = "rfft_f64_1048576", .setup = [] {
  Tensor x = randn({1 << 20}, {.dtype = DType::F64});
  return std::function<void()>([=] { bench::keep(fft::rfft(x)); });
}, .warmup = 2, .iters = 7});
EMBER_BENCH({.name = "rfft_f64_1000003", .setup = [] {
  Tensor x = randn({1000003}, {.dtype = DType::F64});
  return std::function<void()>([=] { bench::keep(fft::rfft(x)); });
}, .warmup = 2, .iters = 7});
// The gradient of a loss through rfft (one forward and one backward transform): with the FFT as
// registry ops both run the native kernels; before, the tape recorded the composition of ember
// ops the transform was built from.
EMBER_BENCH({.name = "rfft_grad_f64_65536", .setup = [] {
  Tensor x = randn({1 << 16}, {.dtype = DType::F64}).to(bench::device().autodiff()).requires_grad_();
  return std::function<void()>([=] { bench::keep(abs(fft::rfft(x)).sum().backward().get(x)); });
}, .warmup = 2, .iters = 7});
EMBER_BENCH({.name = "fft_grad_c128_4099", .setup = [] {
  Tensor z = randn({64, 4099}, {.dtype = DType::F64}).to(kC128).to(bench::device().autodiff()).requires_grad_();
  return std::function<void()>([=] { bench::keep(abs(fft::fft(z)).sum().backward().get(z)); });
}, .warmup = 2, .iters = 7});

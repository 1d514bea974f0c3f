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

// The FFT gradient rows of bench/fft.cpp as one small program, for a before/after comparison
// against a library that predates them (docs/linalg.md, "FFT speed"). Build it against the
// checkout to measure (its headers and its build/libember.so) and run it:
//   c++ -std=c++20 -O2 -I$TREE scripts/fft_grad_bench.cpp -L$TREE/build -lember \
//       -Wl,-rpath,$TREE/build -o /tmp/fft_grad_bench && /tmp/fft_grad_bench
// Medians of 7 calls after 2 warm-ups, 2 threads, on flex and cpu with autodiff.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "ember/ember.h"
#include "ember/fft.h"

using namespace ember;

double median_ms(const std::function<void()>& f) {
  for (int i = 0; i < 2; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < 7; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[3];
}

int main() {
  set_num_threads(2);
  for (Device dev : {Device::flex(), Device::cpu()}) {
    Tensor x = randn({1 << 16}, {.dtype = DType::F64}).to(dev.autodiff()).requires_grad_();
    double a = median_ms([&] { abs(fft::rfft(x)).sum().backward().get(x).sum().item<double>(); });
    Tensor z = randn({64, 4099}, {.dtype = DType::F64}).to(kC128).to(dev.autodiff()).requires_grad_();
    double b = median_ms([&] { abs(fft::fft(z)).sum().backward().get(z).abs().sum().item<double>(); });
    std::printf("%s rfft_grad_f64_65536 %.2f ms  fft_grad_c128_4099 %.2f ms\n", dev.str().c_str(), a, b);
  }
}

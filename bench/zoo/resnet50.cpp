// ResNet-50 batch-1 inference (1x3x224x224, eval, no grad) on a device: prints the median of
// ROUNDS timed runs in milliseconds after WARMUP runs. bench/zoo/resnet50_vs_torch.py runs it
// beside torchvision's resnet50 in the same session.
// Usage: ember_zoo_bench [cpu|cpu_eager|flex] [rounds = 20] [warmup = 3]
#include <ember/ember.h>
#include <ember/models/resnet.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ember;

int main(int argc, char** argv) {
  std::string dev = argc > 1 ? argv[1] : "cpu";
  int rounds = argc > 2 ? std::atoi(argv[2]) : 20, warmup = argc > 3 ? std::atoi(argv[3]) : 3;
  Device d = dev == "flex" ? Device::flex() : dev == "cpu_eager" ? Device::cpu().eager() : Device::cpu();
  DeviceGuard on(d);
  manual_seed(0);
  auto net = models::resnet50();
  net->to(d);
  net->eval();
  Tensor x = randn({1, 3, 224, 224});
  NoGradGuard ng;
  std::vector<double> ms;
  for (int i = 0; i < warmup + rounds; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Tensor y = (*net)(x);
    y.sum().item<float>();  // waits for a lazy device
    double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("ember %s resnet50 batch1 median %.2f ms\n", dev.c_str(), ms[ms.size() / 2]);
}

// Runs every registered workload (or those whose name contains argv[1]) and prints the median
// time per call, one line each, plus JSON to $OUT/ember_cpu.json (or /tmp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "bench.h"
#include "ember/ember.h"

namespace ember::bench {
std::vector<Workload>& workloads() {
  static std::vector<Workload> w;
  return w;
}
}  // namespace ember::bench

int main(int argc, char** argv) {
  using namespace ember::bench;
  std::string filter = argc > 1 ? argv[1] : "";
  std::string out = std::getenv("OUT") ? std::getenv("OUT") : "/tmp";
  std::ofstream js(out + "/ember_cpu.json");
  js << "{";
  bool first = true;
  for (auto& w : workloads()) {
    if (!filter.empty() && w.name.find(filter) == std::string::npos) continue;
    auto body = w.setup();
    for (int i = 0; i < w.warmup; ++i) body();
    std::vector<double> ts;
    for (int i = 0; i < w.iters; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      body();
      ts.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ts.begin(), ts.end());
    double med = ts[ts.size() / 2];
    std::printf("%-36s %10.3f ms", w.name.c_str(), med);
    if (w.flops > 0) std::printf("  %.0f GFLOP/s", w.flops / med / 1e6);
    std::printf("\n");
    std::fflush(stdout);
    js << (first ? "" : ",") << "\n \"" << w.name << "\": " << med;
    first = false;
  }
  js << "\n}\n";
  return 0;
}

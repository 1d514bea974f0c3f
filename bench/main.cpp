// ember_bench: every registered row (or those whose name contains the filter argument, or one of
// its '|'-separated alternatives: "gemm|softmax") on one device, printing the median time per
// call, one line each with the device it ran on, plus JSON to $OUT/ember_cpu.json (or /tmp).
// Usage: ember_bench [--device flex|cpu|cpu_eager|cuda|cuda_eager] [FILTER]
// Rows marked `gpu` (bench/gpu.cpp: the rows of ../shared/peers/torch_gpu.py) run only on cuda.
// ember-bench (tools/ember-bench) runs the same rows by suite, on every device, beside the peers.
// With EMBER_PROFILE=1 each line also gives the share of the timed calls' wall time spent inside
// backend kernels (see ember/profile.h) and the kernel calls per call; EMBER_PROFILE=ops adds the
// ops that took the most kernel time.
// With BENCH_CLOCK=cpu the rows are the process's CPU time per call instead of wall time: on a
// machine shared with other work, CPU time at one thread measures the work a row does without
// the time it waited for a core (with more threads it also counts the pool's spinning).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ember/ember.h"
#include "ember/profile.h"
#include "runner.h"

namespace {
// On cuda: the ops the row (setup included) ran through the host fallback, with their counts, on
// one line under the row, so the table shows what is left to write (nothing when none did).
void print_fallbacks(const std::vector<std::pair<std::string, int64_t>>& stats) {
  if (stats.empty()) return;
  std::string line = "    host fallback:";
  for (size_t i = 0; i < stats.size(); ++i)
    line += (i ? ", " : " ") + stats[i].first + " x" + std::to_string(stats[i].second);
  std::printf("%s\n", line.c_str());
}

void print_ops(size_t calls) {
  auto stats = ember::profile::op_stats();
  for (size_t i = 0; i < stats.size() && i < 16; ++i)
    std::printf("    %-24s %6.1f calls %10.3f ms\n", stats[i].op.c_str(),
                double(stats[i].calls) / double(calls), stats[i].ns / 1e6 / double(calls));
}
}  // namespace

int main(int argc, char** argv) {
  using namespace ember::bench;
  const char* prof_env = std::getenv("EMBER_PROFILE");
  const bool per_op = prof_env && std::string(prof_env) == "ops";
  const char* clock_env = std::getenv("BENCH_CLOCK");
  TimingRules rules;
  rules.cpu_clock = clock_env && std::string(clock_env) == "cpu";
  // Fixed counts for a profiler run (ncu over a whole step): EMBER_BENCH_WARMUP, EMBER_BENCH_ITERS.
  if (const char* e = std::getenv("EMBER_BENCH_WARMUP")) rules.warmup = std::atoi(e);
  if (const char* e = std::getenv("EMBER_BENCH_ITERS")) rules.iters = rules.max_iters = std::atoi(e);
  std::string filter, dev_name = "flex";
  if (const char* d = std::getenv("EMBER_BENCH_DEVICE")) dev_name = d;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc)
      dev_name = argv[++i];
    else if (a.rfind("--device=", 0) == 0)
      dev_name = a.substr(9);
    else
      filter = a;
  }
  try {
    select_device(dev_name);
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  const bool on_cuda = device().backend() == ember::Backend::Cuda;
  std::string out = std::getenv("OUT") ? std::getenv("OUT") : "/tmp";
  std::ofstream js(out + "/ember_cpu.json");
  js << "{";
  bool first = true;
  for (auto& w : workloads()) {
    if (!filter.empty() && !matches(w.name, filter)) continue;
    if (w.on_request && w.name != filter) continue;
    if (w.gpu && !on_cuda) continue;
    const RowTiming t = time_row(w, rules);
    if (!t.error.empty()) {
      std::printf("%-36s %-6s failed: %s\n", w.name.c_str(), dev_name.c_str(), t.error.c_str());
      std::fflush(stdout);
      continue;
    }
    std::vector<double> ts = t.samples_ms;
    std::sort(ts.begin(), ts.end());
    const double med = ts[ts.size() / 2];
    std::printf("%-36s %-6s %10.3f ms", w.name.c_str(), dev_name.c_str(), med);
    if (w.flops > 0) std::printf("  %.0f GFLOP/s", w.flops / med / 1e6);
    if (t.kernel_share >= 0)
      std::printf("  kernels %.1f%% (%.1f calls)", 100 * t.kernel_share, t.kernel_calls);
    std::printf("\n");
    if (per_op) print_ops(ts.size() * size_t(w.reps));
    print_fallbacks(t.fallbacks);
    std::fflush(stdout);
    js << (first ? "" : ",") << "\n \"" << w.name << "\": " << med;
    first = false;
  }
  js << "\n}\n";
  return 0;
}

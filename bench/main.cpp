// Runs every registered workload (or those whose name contains the filter argument, or one of its
// '|'-separated alternatives: "gemm|softmax") and prints
// the median time per call, one line each with the device it ran on, plus JSON to
// $OUT/ember_cpu.json (or /tmp). Usage: ember_bench [--device flex|cpu|cpu_eager|cuda|cuda_eager] [FILTER]
// Rows marked `gpu` (bench/gpu.cpp: the rows of ../shared/peers/torch_gpu.py) run only on cuda.
// With EMBER_PROFILE=1 each line also gives the share of the timed calls' wall time spent inside
// backend kernels (see ember/profile.h) and the kernel calls per call; EMBER_PROFILE=ops adds the
// ops that took the most kernel time.
// With BENCH_CLOCK=cpu the rows are the process's CPU time per call instead of wall time: on a
// machine shared with other work, CPU time at one thread measures the work a row does without
// the time it waited for a core (with more threads it also counts the pool's spinning).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "bench.h"
#include "ember/ember.h"
#include "ember/profile.h"

namespace ember::bench {
std::vector<Workload>& workloads() {
  static std::vector<Workload> w;
  return w;
}

namespace {
std::string g_device_name;
}
std::vector<ember::Tensor>& kept() {
  static std::vector<ember::Tensor> k;
  return k;
}
void keep(ember::Tensor t) { kept().push_back(std::move(t)); }
ember::Device device() {
  const std::string& n = g_device_name;
  if (n.empty() || n == "flex") return ember::Device::flex();
  if (n == "cpu") return ember::Device::cpu();
  if (n == "cpu_eager") return ember::Device::cpu().eager();
  if (n == "cuda") return ember::Device::cuda(0);
  if (n == "cuda_eager") return ember::Device::cuda(0).eager();
  ember::detail::throw_value(
      "ember_bench", "expected --device flex, cpu, cpu_eager, cuda or cuda_eager, found '" + n + "'");
}
}  // namespace ember::bench

namespace {
// Milliseconds on the chosen clock: steady wall time, or the process's CPU time.
double now_ms(bool cpu_clock) {
  if (cpu_clock) {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether `name` contains `filter` or one of its '|'-separated alternatives.
bool matches(const std::string& name, const std::string& filter) {
  size_t start = 0;
  while (true) {
    const size_t bar = filter.find('|', start);
    const std::string alt = filter.substr(start, bar == std::string::npos ? bar : bar - start);
    if (!alt.empty() && name.find(alt) != std::string::npos) return true;
    if (bar == std::string::npos) return false;
    start = bar + 1;
  }
}

// On cuda: the ops the row (setup included) ran through the host fallback, with their counts, on
// one line under the row, so the table shows what is left to write (nothing when none did).
void print_fallbacks() {
  const auto stats = ember::cuda::fallback_stats();
  if (stats.empty()) return;
  std::string line = "    host fallback:";
  for (size_t i = 0; i < stats.size(); ++i)
    line += (i ? ", " : " ") + stats[i].first + " x" + std::to_string(stats[i].second);
  std::printf("%s\n", line.c_str());
}

void print_ops(int iters) {
  auto stats = ember::profile::op_stats();
  for (size_t i = 0; i < stats.size() && i < 16; ++i)
    std::printf("    %-24s %6.1f calls %10.3f ms\n", stats[i].op.c_str(),
                double(stats[i].calls) / iters, stats[i].ns / 1e6 / iters);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace ember::bench;
  const char* prof_env = std::getenv("EMBER_PROFILE");
  const bool per_op = prof_env && std::string(prof_env) == "ops";
  const char* clock_env = std::getenv("BENCH_CLOCK");
  const bool cpu_clock = clock_env && std::string(clock_env) == "cpu";
  std::string filter;
  if (const char* d = std::getenv("EMBER_BENCH_DEVICE")) g_device_name = d;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) g_device_name = argv[++i];
    else if (a.rfind("--device=", 0) == 0) g_device_name = a.substr(9);
    else filter = a;
  }
  const ember::Device dev = [] {
    try {
      return device();
    } catch (const ember::Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
      std::exit(2);
    }
  }();
  ember::set_default_device(dev);
  const std::string dev_name = g_device_name.empty() ? "flex" : g_device_name;
  std::string out = std::getenv("OUT") ? std::getenv("OUT") : "/tmp";
  std::ofstream js(out + "/ember_cpu.json");
  js << "{";
  bool first = true;
  for (auto& w : workloads()) {
    if (!filter.empty() && !matches(w.name, filter)) continue;
    if (w.on_request && w.name != filter) continue;
    if (w.gpu && dev.backend() != ember::Backend::Cuda) continue;
    const bool on_cuda = dev.backend() == ember::Backend::Cuda;
    if (on_cuda) ember::cuda::reset_fallback_stats();
    // A row that fails (a CaptureError, an out-of-memory) says so and the others still run.
    try {
      auto body = w.setup();
      // A lazy device queues the row's ops; each call is timed until its work has run.
      auto run = [&] {
        // Each call's queued work is launched before the next call is recorded, so a lazy device
        // neither fuses nor deduplicates the repeated calls of one sample.
        for (int r = 0; r < w.reps; ++r) {
          body();
          ember::flush(dev);
        }
        ember::synchronize(dev);
        kept().clear();
      };
      for (int i = 0; i < w.warmup; ++i) run();
      std::vector<double> ts;
      ember::profile::reset();
      for (int i = 0; i < w.iters; ++i) {
        const double t0 = now_ms(cpu_clock);
        run();
        ts.push_back((now_ms(cpu_clock) - t0) / w.reps);
      }
      std::sort(ts.begin(), ts.end());
      double med = ts[ts.size() / 2];
      std::printf("%-36s %-6s %10.3f ms", w.name.c_str(), dev_name.c_str(), med);
      if (w.flops > 0) std::printf("  %.0f GFLOP/s", w.flops / med / 1e6);
      if (ember::profile::enabled()) {
        double total = 0;
        for (double t : ts) total += t * w.reps;
        std::printf("  kernels %.1f%% (%.1f calls)", 100 * ember::profile::kernel_ns() / 1e6 / total,
                    double(ember::profile::kernel_calls()) / (w.iters * w.reps));
      }
      std::printf("\n");
      if (per_op) print_ops(w.iters * w.reps);
      if (on_cuda) print_fallbacks();
      std::fflush(stdout);
      js << (first ? "" : ",") << "\n \"" << w.name << "\": " << med;
      first = false;
    } catch (const ember::Error& e) {
      std::printf("%-36s %-6s failed: %s\n", w.name.c_str(), dev_name.c_str(), e.what());
      std::fflush(stdout);
      kept().clear();
    }
  }
  js << "\n}\n";
  return 0;
}

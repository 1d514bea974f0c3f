#include "runner.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "ember/ember.h"
#include "ember/profile.h"

namespace ember::bench {
namespace {
std::string g_device = "flex";
std::vector<ember::Tensor>& kept() {
  static std::vector<ember::Tensor> k;
  return k;
}
const char* const kDevices[] = {"flex", "cpu", "cpu_eager", "cuda", "cuda_eager"};

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
}  // namespace

std::vector<Workload>& workloads() {
  static std::vector<Workload> w;
  return w;
}

Register::Register(Workload w, std::source_location at) {
  if (w.suite.empty()) w.suite = std::filesystem::path(at.file_name()).stem().string();
  workloads().push_back(std::move(w));
}

const std::string& suite_of(const Workload& w) { return w.suite; }

void keep(ember::Tensor t) { kept().push_back(std::move(t)); }

bool known_device(const std::string& name) {
  return std::find(std::begin(kDevices), std::end(kDevices), name) != std::end(kDevices);
}

std::vector<std::string> available_devices() {
  std::vector<std::string> out = {"flex", "cpu", "cpu_eager"};
  if (ember::cuda::is_available()) {
    out.push_back("cuda");
    out.push_back("cuda_eager");
  }
  return out;
}

ember::Device device() {
  const std::string& n = g_device;
  if (n == "flex") return ember::Device::flex();
  if (n == "cpu") return ember::Device::cpu();
  if (n == "cpu_eager") return ember::Device::cpu().eager();
  if (n == "cuda") return ember::Device::cuda(0);
  if (n == "cuda_eager") return ember::Device::cuda(0).eager();
  ember::detail::throw_value(
      "ember-bench",
      "expected a device flex, cpu, cpu_eager, cuda or cuda_eager, found '" + n + "'");
}

void select_device(const std::string& name) {
  const std::string old = g_device;
  g_device = name.empty() ? "flex" : name;
  try {
    ember::set_default_device(device());
  } catch (...) {
    g_device = old;
    throw;
  }
}

const std::string& selected_device() { return g_device; }

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

RowTiming time_row(const Workload& w, const TimingRules& rules) {
  RowTiming out;
  const ember::Device dev = device();
  const bool on_cuda = dev.backend() == ember::Backend::Cuda;
  if (on_cuda) ember::cuda::reset_fallback_stats();
  try {
    auto body = w.setup();
    // A lazy device queues the row's ops; each call is timed until its work has run. Each call's
    // queued work is launched before the next call is recorded, so a lazy device neither fuses
    // nor deduplicates the repeated calls of one sample.
    auto run = [&] {
      for (int r = 0; r < w.reps; ++r) {
        body();
        ember::flush(dev);
      }
      ember::synchronize(dev);
      kept().clear();
    };
    const int warmup = rules.warmup >= 0 ? rules.warmup : w.warmup;
    const double w0 = now_ms(false);
    for (int i = 0; i < warmup || now_ms(false) - w0 < rules.warmup_ms; ++i) run();
    const int iters = std::max(1, rules.iters >= 0 ? rules.iters : w.iters);
    ember::profile::reset();
    double total = 0;
    for (int i = 0; i < rules.max_iters && (i < iters || total < rules.min_time_ms); ++i) {
      const double t0 = now_ms(rules.cpu_clock);
      run();
      const double t = now_ms(rules.cpu_clock) - t0;
      total += t;
      out.samples_ms.push_back(t / w.reps);
    }
    if (ember::profile::enabled() && total > 0) {
      out.kernel_share = ember::profile::kernel_ns() / 1e6 / total;
      out.kernel_calls =
          double(ember::profile::kernel_calls()) / double(out.samples_ms.size() * w.reps);
    }
  } catch (const ember::Error& e) {
    // A row that fails (a CaptureError, an out-of-memory) says so and the others still run.
    out.error = e.what();
    out.samples_ms.clear();
    kept().clear();
  }
  if (on_cuda) out.fallbacks = ember::cuda::fallback_stats();
  return out;
}

}  // namespace ember::bench

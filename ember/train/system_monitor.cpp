// The dashboard's system panel: this process's CPU time, RSS and threads from /proc, and for a
// model on a GPU ember's allocator counters plus the driver's view through NVML, which is loaded
// with dlopen when present (no build dependency; a machine without a driver shows "n/a").
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "ember/cuda.h"
#include "ember/error.h"
#include "ember/train/detail/dashboard_view.h"

namespace ember::train::detail {
namespace {

double wall_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// utime + stime of this process, in seconds; -1 when /proc is not there.
double cpu_seconds() {
  std::ifstream in("/proc/self/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = s.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream fields(s.substr(close + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stoull(f);
    if (i == 15) {
      stime = std::stoull(f);
      break;
    }
  }
  return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

void memory_and_threads(SystemSample& s) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    long long v = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %lld kB", &v) == 1) s.rss_bytes = v * 1024;
    if (std::sscanf(line.c_str(), "Threads: %lld", &v) == 1) s.threads = v;
  }
}

// The few NVML calls used, resolved once. NVML's handles are opaque pointers; the structs below
// are its documented layouts (nvmlUtilization_t, nvmlMemory_t).
struct Nvml {
  struct Utilization {
    unsigned gpu, memory;
  };
  struct Memory {
    unsigned long long total, free, used;
  };
  using Init = int (*)();
  using Handle = int (*)(unsigned, void**);
  using Util = int (*)(void*, Utilization*);
  using Mem = int (*)(void*, Memory*);
  Handle handle = nullptr;
  Util util = nullptr;
  Mem mem = nullptr;
  bool ok = false;

  Nvml() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
    handle = reinterpret_cast<Handle>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    util = reinterpret_cast<Util>(dlsym(lib, "nvmlDeviceGetUtilizationRates"));
    mem = reinterpret_cast<Mem>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    ok = init && handle && util && mem && init() == 0;
  }
};

const Nvml& nvml() {
  static const Nvml n;  // loaded on first use only: a CPU run never opens the library
  return n;
}

}  // namespace

SystemSample SystemMonitor::sample(int gpu) {
  SystemSample s;
  s.cores = int(sysconf(_SC_NPROCESSORS_ONLN));
  const double cpu = cpu_seconds(), wall = wall_seconds();
  if (cpu >= 0 && last_cpu_s_ >= 0 && wall > last_wall_s_)
    s.cpu_percent = 100.0 * (cpu - last_cpu_s_) / (wall - last_wall_s_);
  last_cpu_s_ = cpu;
  last_wall_s_ = wall;
  memory_and_threads(s);
  s.gpu = gpu;
  if (gpu >= 0) {
    try {
      cuda::MemoryStats m = cuda::memory_stats(gpu);
      s.gpu_allocated = m.allocated;
      s.gpu_reserved = m.reserved;
    } catch (const Error&) {  // a build without CUDA: the fields stay unknown
    }
    const Nvml& n = nvml();
    void* h = nullptr;
    if (n.ok && n.handle(unsigned(gpu), &h) == 0) {
      Nvml::Utilization u{};
      Nvml::Memory mem{};
      if (n.util(h, &u) == 0) s.gpu_util = u.gpu;
      if (n.mem(h, &mem) == 0) {
        s.gpu_used = int64_t(mem.used);
        s.gpu_total = int64_t(mem.total);
      }
    }
  }
  return s;
}

}  // namespace ember::train::detail

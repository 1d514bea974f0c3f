#include "machine.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "ember/cuda.h"

// Written at build time by commit_stamp.cmake (build_info.cpp in the build folder).
extern const char* const ember_bench_build_commit;
extern const bool ember_bench_build_dirty;

namespace ember::benchtool {
namespace {
std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}
}  // namespace

std::string fingerprint_of(const Machine& m) {
  std::ostringstream key;
  key << m.cpu_model << '|' << m.flags << '|' << m.cores << '|' << m.memory_gib << '|' << m.gpus;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key.str()) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

Machine this_machine() {
  Machine m;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && m.cpu_model.empty()) m.cpu_model = value;
    if (key == "flags" && flags.empty()) {
      std::istringstream words(value);
      for (std::string w; words >> w;) flags.insert(w);
    }
  }
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  for (const char* f :
       {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile"})
    if (flags.count(f)) m.flags += (m.flags.empty() ? "" : " ") + std::string(f);
  m.avx2 = flags.count("avx2") > 0;
  m.avx512 = flags.count("avx512f") > 0;
  m.cores = int(sysconf(_SC_NPROCESSORS_ONLN));
  const double bytes = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  m.memory_gib = int(bytes / double(1ull << 30) + 0.5);
  m.gpus = ember::cuda::device_count();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) m.hostname = host;
  m.fingerprint = fingerprint_of(m);
  return m;
}

std::string build_commit() { return ember_bench_build_commit; }
bool build_dirty() { return ember_bench_build_dirty; }

}  // namespace ember::benchtool

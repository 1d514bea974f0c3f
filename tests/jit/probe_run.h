#pragma once
// Runs a probe program (a child process of the cache and fusion process tests) and reads the
// one-line result file it writes: "key=value key=value ...".
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ember/backends/cpu/jit/subprocess.h"
#include "store/store_test_util.h"

namespace ember::test {

struct Probe {
  bool exited_ok = false;
  std::string output;                  // the child's stderr (and stdout)
  std::map<std::string, long> result;  // its result line
  int warnings() const {
    int n = 0;
    for (size_t p = output.find("warning"); p != std::string::npos;
         p = output.find("warning", p + 1))
      ++n;
    return n;
  }
};

/// Runs `argv` with the environment `env` ("NAME=value"; fusion debug output off) and reads
/// `result_file`, which the probe names in its own arguments.
inline Probe run_probe_program(const std::vector<std::string>& argv, std::vector<std::string> env,
                               const std::string& result_file) {
  cpu::jit::ProcessOptions o;
  o.timeout_s = 120;
  o.env = std::move(env);
  o.env.push_back("EMBER_FUSION_DEBUG=0");
  auto r = cpu::jit::run_process(argv, o);
  Probe p;
  p.exited_ok = r.success();
  p.output = r.output;
  std::istringstream line(read_bytes(result_file));
  for (std::string kv; line >> kv;) {
    size_t eq = kv.find('=');
    if (eq != std::string::npos) p.result[kv.substr(0, eq)] = std::stol(kv.substr(eq + 1));
  }
  return p;
}

}  // namespace ember::test

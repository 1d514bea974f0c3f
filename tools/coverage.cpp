// Prints the op coverage table: every registered op, per built backend, the dtypes its kernel
// takes ("k" per dtype), or "decomp" where it runs through its decomposition, or "-" where it has
// neither. Usage: ember_coverage [--markdown]
#include <cstdio>
#include <cstring>
#include <string>

#include "ember/backends/backend.h"
#include "ember/ops/registry.h"

using namespace ember;

int main(int argc, char** argv) {
  bool md = argc > 1 && std::strcmp(argv[1], "--markdown") == 0;
  detail::init();
  const char* dts[] = {"b1", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"};
  std::string header = md ? "| op | category |" : "op                               category   ";
  for (int b = 0; b < kNumBackends; ++b) {
    if (!backend_for(Backend(b))) continue;
    std::string cols;
    for (const char* d : dts) cols += std::string(d) + " ";
    header += md ? std::string(" ") + backend_name(Backend(b)) + " (" + cols + ") |"
                 : std::string(backend_name(Backend(b))) + ": " + cols + "  ";
  }
  std::puts(header.c_str());
  if (md) {
    std::string sep = "|---|---|";
    for (int b = 0; b < kNumBackends; ++b)
      if (backend_for(Backend(b))) sep += "---|";
    std::puts(sep.c_str());
  }
  int missing = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const OpDef& d = op_def(OpId(i));
    char line[512];
    std::snprintf(line, sizeof line, md ? "| %s | %s |" : "%-32s %-10s ", d.name, category_name(d.category));
    std::string row = line;
    for (int b = 0; b < kNumBackends; ++b) {
      BackendImpl* be = backend_for(Backend(b));
      if (!be) continue;
      const KernelEntry& k = be->kernel(OpId(i));
      std::string cell;
      for (int t = 0; t < kNumDTypes; ++t) {
        bool has = k.fn && (k.dtypes & (1u << t));
        std::string mark = has ? "k" : d.decompose ? "d" : "-";
        cell += mark + std::string(std::strlen(dts[t]), ' ');
      }
      if (!k.fn && !d.decompose) ++missing;
      row += md ? " " + cell + " |" : std::string(std::strlen(backend_name(Backend(b))) + 2, ' ') + cell + "  ";
    }
    std::puts(row.c_str());
  }
  std::printf("%s%d ops; k = kernel, d = decomposition, - = none; %d op/backend pairs with neither\n",
              md ? "\n" : "", kNumOps, missing);
  return 0;
}

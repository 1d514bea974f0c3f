#pragma once
// What a benchmark result is keyed by besides the row and device: the machine it ran on and the
// commit the binary was built from.
#include <string>

namespace ember::benchtool {

struct Machine {
  std::string cpu_model;  // /proc/cpuinfo's "model name"
  std::string flags;      // the vector-ISA flags that change kernels: "avx2 fma avx512f ..."
  bool avx2 = false, avx512 = false;
  int cores = 0;            // logical CPUs online
  int memory_gib = 0;       // physical memory, rounded
  int gpus = 0;             // CUDA devices ember sees
  std::string hostname;     // informative only: not part of the fingerprint
  std::string fingerprint;  // 16 hex digits of a hash of everything above but the hostname
};

/// This machine.
Machine this_machine();
/// The fingerprint of a machine's fields (what this_machine() puts in `fingerprint`).
std::string fingerprint_of(const Machine& m);

/// The git commit this binary was built from ("unknown" outside a git checkout), and whether
/// its working tree had uncommitted changes to tracked files at build time.
std::string build_commit();
bool build_dirty();

}  // namespace ember::benchtool

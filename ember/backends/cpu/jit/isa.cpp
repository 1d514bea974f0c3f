#include "ember/backends/cpu/jit/isa.h"

#include <cstdlib>
#include <cstring>

namespace ember::cpu::jit {
namespace {

Isa detect() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // x86-64-v4's AVX-512 subsets and v3's AVX2/FMA/BMI; the OS must save the wide registers too,
  // which __builtin_cpu_supports already checks (it reads XCR0).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512cd"))
    return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"))
    return Isa::kAvx2;
#endif
  return Isa::kBaseline;
}

}  // namespace

Isa host_isa() {
  static const Isa isa = [] {
    Isa found = detect();
    const char* want = std::getenv("EMBER_CPU_ISA");
    if (!want || !*want) return found;
    Isa cap = std::strcmp(want, "baseline") == 0 ? Isa::kBaseline
              : std::strcmp(want, "avx2") == 0   ? Isa::kAvx2
                                                 : Isa::kAvx512;
    return int(cap) < int(found) ? cap : found;
  }();
  return isa;
}

namespace {
struct Level {
  const char* name;
  int vector_bytes;
  const char* march;  // the x86-64 micro-architecture level (gcc >= 11, clang >= 12)
};
constexpr Level kLevels[] = {{"baseline", 16, "-march=x86-64"},
                             {"avx2", 32, "-march=x86-64-v3"},
                             {"avx512", 64, "-march=x86-64-v4"}};
}  // namespace

const char* isa_name(Isa isa) { return kLevels[int(isa)].name; }
int isa_vector_bytes(Isa isa) { return kLevels[int(isa)].vector_bytes; }

const char* isa_march_flag(Isa isa) {
#if defined(__x86_64__)
  return kLevels[int(isa)].march;
#else
  (void)isa;
  return "";
#endif
}

const char* machine_name() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

}  // namespace ember::cpu::jit

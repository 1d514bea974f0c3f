#pragma once
// The host JIT's entry point for the cpu backend and the fusion layer: one kernel cache per
// process over the host toolchain, both configured from the environment (EMBER_CXX,
// EMBER_CACHE_DIR, EMBER_CACHE_MAX_MB, EMBER_JIT_TIMEOUT, EMBER_CPU_ISA, EMBER_FUSION_DEBUG).
#include "ember/backends/cpu/jit/host_toolchain.h"
#include "ember/kl/cache/kernel_cache.h"

namespace ember::cpu::jit {

/// The process's host toolchain (created on first use, never destroyed before the cache).
const std::shared_ptr<HostToolchain>& host_toolchain();
/// The process's kernel cache for the host CPU (created on first use).
kl::KernelCache& host_kernel_cache();

}  // namespace ember::cpu::jit

#include "ember/backends/cpu/jit/jit.h"

namespace ember::cpu::jit {

const std::shared_ptr<HostToolchain>& host_toolchain() {
  static const std::shared_ptr<HostToolchain> tc = std::make_shared<HostToolchain>();
  return tc;
}

kl::KernelCache& host_kernel_cache() {
  // Destroyed at exit: a compile still running is cancelled and its compiler killed.
  static kl::KernelCache cache(host_toolchain());
  return cache;
}

}  // namespace ember::cpu::jit

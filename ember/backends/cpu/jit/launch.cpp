#include "ember/backends/cpu/jit/launch.h"

#include <string>

#include "ember/backends/flex/thread_pool.h"
#include "ember/error.h"

namespace ember::cpu::jit {

KernelStatus launch(kl::KernelFn fn, const void* args, int64_t n, int64_t grain,
                    KernelStatus* status) {
  if (status) *status = KernelStatus{};
  // The pool's range function has the entry points' signature: no wrapper, no allocation.
  if (n > 0) flex::detail::parallel_for_impl(n, grain, fn, args);
  if (!status) return {};
  KernelStatus s;
  s.code = __atomic_load_n(&status->code, __ATOMIC_ACQUIRE);
  s.detail = status->detail;
  return s;
}

void throw_if_failed(const KernelStatus& status, const char* op) {
  switch (status.code) {
    case kOk:
      return;
    case kIndexOutOfRange:
      ember::detail::throw_index(op, "index " + std::to_string(status.detail) + " is out of range");
    case kInvalidValue:
      ember::detail::throw_value(
          op, "a kernel found an invalid value (" + std::to_string(status.detail) + ")");
    default:
      throw Error(std::string("[") + op + "] a kernel reported error " +
                  std::to_string(status.code) + " (detail " + std::to_string(status.detail) + ")");
  }
}

}  // namespace ember::cpu::jit

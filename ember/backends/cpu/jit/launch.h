#pragma once
// Running a JIT entry point over work items [0, n) on ember's thread pool (flex's: created once,
// ranges of at least `grain` items, inline when n <= grain or when called from a worker).
//
// Kernels report errors through a status word the caller puts in their arguments (generated code
// is header-free and has no exceptions): the first failing work item stores its code and detail,
// e.g. the offending index. The launcher clears it before the run and returns it after; a C++
// exception thrown by an entry point (a host-written kernel) propagates to the caller.
#include <cstdint>

#include "ember/kl/toolchain.h"

namespace ember::cpu::jit {

/// The kernels' error word. Generated code declares the same layout (kStatusDecl) and sets it
/// with a compare-and-swap on `code`, so the first error wins and later ones do not overwrite it.
struct KernelStatus {
  int32_t code = 0;  // 0: no error; see KernelError
  int32_t reserved = 0;
  int64_t detail = 0;  // e.g. the index that was out of range
};
enum KernelError : int32_t { kOk = 0, kIndexOutOfRange = 1, kInvalidValue = 2 };

/// The C declarations generated sources include for the status word, matching KernelStatus.
inline constexpr const char* kStatusDecl =
    "struct ember_status { __INT32_TYPE__ code; __INT32_TYPE__ reserved; __INT64_TYPE__ detail; "
    "};\n"
    "static inline void ember_fail(struct ember_status* s, __INT32_TYPE__ code, "
    "__INT64_TYPE__ detail) {\n"
    "  __INT32_TYPE__ zero = 0;\n"
    "  if (__atomic_compare_exchange_n(&s->code, &zero, code, 0, __ATOMIC_RELAXED, "
    "__ATOMIC_RELAXED))\n"
    "    s->detail = detail;\n"
    "}\n";

/// Runs fn(args, begin, end) over [0, n) in ranges of at least `grain` items. When `status` is
/// given it is cleared first and holds the kernels' first error afterwards (also returned).
KernelStatus launch(kl::KernelFn fn, const void* args, int64_t n, int64_t grain,
                    KernelStatus* status = nullptr);

/// Throws the ember::Error subclass for a failed status ("[op] index 7 is out of range"); does
/// nothing for kOk.
void throw_if_failed(const KernelStatus& status, const char* op);

}  // namespace ember::cpu::jit

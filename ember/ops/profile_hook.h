#pragma once
// The hook run_on_backend uses for ember/profile.h (private to the op registry).
#include "ember/ops/registry.h"

namespace ember::profile::detail {
/// Set from EMBER_PROFILE at start-up; profile::set_enabled changes it.
extern bool g_enabled;
/// Runs a kernel, adding its wall time to the calling thread's counters.
TensorList timed_kernel(Kernel fn, const OpCall& call);
}  // namespace ember::profile::detail

#pragma once
// Opt-in kernel timing, to tell how much of a step is kernel work and how much is ember's own
// machinery around it (inference, layers, the autodiff tape, rules' glue, freeing).
//
// When on (EMBER_PROFILE=1 in the environment, or profile::set_enabled(true)), every outermost
// backend kernel call on the calling thread is timed with steady_clock: run_on_backend reads the
// clock before and after the kernel function. Kernels that dispatch other ops internally (a cast,
// a copy_) count as one call: the nested ones are part of the outer kernel's time. Ops that a
// backend lowers through a decomposition are not timed themselves; their sub-ops' kernels are.
// When off, the cost is one load and one predictable branch per kernel call.
#include <cstdint>
#include <string>
#include <vector>

namespace ember::profile {

/// Whether kernel calls are being timed.
bool enabled();
/// Turns timing on or off (the initial state comes from EMBER_PROFILE).
void set_enabled(bool on);
/// Clears the calling thread's counters.
void reset();

struct OpStat {
  std::string op;
  int64_t calls = 0;
  double ns = 0;  // wall time inside the op's kernels
};
/// The calling thread's wall time inside backend kernels since reset(), in nanoseconds.
double kernel_ns();
/// The calling thread's number of (outermost) kernel calls since reset().
int64_t kernel_calls();
/// Per-op counters since reset() of the ops that ran, slowest first.
std::vector<OpStat> op_stats();

}  // namespace ember::profile

#pragma once
// The fusion layer's counters: what lazy devices recorded, how their queues ran, and how many
// kernels they launched (tests pin these for known training steps).
#include <cstdint>

namespace ember::fusion {

struct Stats {
  int64_t recorded = 0;         // ops queued
  int64_t flushes = 0;          // queue runs
  int64_t fused_kernels = 0;    // generated kernels launched
  int64_t fused_ops = 0;        // queued ops those kernels covered
  int64_t eager_ops = 0;        // queued ops run one by one (no kernel fits, or not compiled yet)
  int64_t plan_hits = 0;        // queue runs that reused a cached plan
  int64_t plan_misses = 0;      // queue runs that planned
};
/// Counters since the process started (or reset_stats), over every thread.
Stats stats();
void reset_stats();

/// Whether a queue run waits for kernels still compiling (default: no, the ops run one by one
/// meanwhile, so a program never waits on the compiler). Tests and benchmarks that count
/// kernels turn it on; EMBER_FUSION_WAIT=1 does too.
void set_wait_for_kernels(bool on);
/// Turns the generation of fused kernels on or off (queues still run, op by op). For debugging:
/// a result that changes with it points at a fused kernel.
void set_enabled(bool on);

/// The most one generated kernel takes: queued ops in a group, memory operands it reads and
/// values it writes. A longer chain splits into several kernels instead of compiling a giant
/// one (and staying under a target's argument limits).
struct GroupLimits {
  int ops = 256;
  int inputs = 48;
  int outputs = 24;
};
void set_group_limits(const GroupLimits& limits);
GroupLimits group_limits();

}  // namespace ember::fusion

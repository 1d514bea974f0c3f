#pragma once
// Times one registered row on one device: the warm-up and repeat rules, the clock, the profile
// and host-fallback figures. ember_bench (bench/main.cpp) and ember-bench (tools/ember-bench)
// both time rows through it, so a row means the same in either.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bench.h"

namespace ember::bench {

/// How many calls a row gets. A row's own `warmup` and `iters` apply unless overridden here;
/// the time limits add calls until they are reached (a row never gets fewer than its count).
struct TimingRules {
  int warmup = -1;         // warm-up calls; -1: the row's own
  int iters = -1;          // timed samples at least; -1: the row's own
  double warmup_ms = 0;    // and warm up for at least this long
  double min_time_ms = 0;  // and sample until the samples add up to this long
  int max_iters = 1000;    // but never more samples than this
  bool cpu_clock = false;  // the process's CPU time instead of wall time
};

struct RowTiming {
  std::vector<double> samples_ms;  // one call each (a sample of `reps` calls / reps)
  double kernel_share = -1;        // with EMBER_PROFILE: share of the time inside kernels
  double kernel_calls = 0;         // with EMBER_PROFILE: kernel calls per call
  std::vector<std::pair<std::string, int64_t>> fallbacks;  // cuda: ops that ran on the host
  std::string error;  // non-empty: the row failed (the message)
};

/// The devices this binary can run rows on, in order: flex, cpu, cpu_eager, and cuda and
/// cuda_eager when the cuda backend is built and a GPU is present.
std::vector<std::string> available_devices();
/// Whether `name` is a device name that ember knows (available here or not).
bool known_device(const std::string& name);
/// Makes `name` the device of bench::device() and ember's default device; throws ember::Error
/// when the device is unknown or not available.
void select_device(const std::string& name);
/// The name set by select_device ("flex" when none was).
const std::string& selected_device();
/// The suite of a row (its `suite`, else the stem of its file).
const std::string& suite_of(const Workload& w);
/// Whether `name` contains `filter` or one of its '|'-separated alternatives.
bool matches(const std::string& name, const std::string& filter);
/// Runs `w` on the selected device: warm-up, then the timed samples. A row that throws an
/// ember::Error reports it in `error` (the others can still run).
RowTiming time_row(const Workload& w, const TimingRules& rules);

}  // namespace ember::bench

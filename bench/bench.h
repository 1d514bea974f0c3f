#pragma once
// ember's side-by-side benchmarks: each workload mirrors a row of a PyTorch peer script
// (bench/peers/, ../shared/peers/torch_cpu.py) and is registered with EMBER_BENCH; ember-bench
// (tools/ember-bench) runs the rows by suite on every device beside their peers and reports
// ember/peer ratios; ember_bench (bench/main.cpp) runs them on one device.
#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include "ember/device.h"
#include "ember/tensor.h"

namespace ember::bench {

struct Workload {
  std::string name;  // the peer's row name, e.g. "add_16M"
  std::function<std::function<void()>()> setup;  // builds inputs, returns the timed body
  int warmup = 3, iters = 10;
  double flops = 0;  // per call, for GFLOP/s
  bool on_request = false;  // long rows: run only when the filter names them exactly
  bool gpu = false;  // rows sized for a GPU (rows of torch_gpu.py): run only on --device cuda
  /// Calls per timed sample (the sample's time / reps is one call): on an asynchronous device a
  /// call then costs its launches and device work, not a host round trip each time.
  int reps = 1;
  /// The ember-bench suite ("elementwise", "reduce", "matmul", ...); empty: the stem of the file
  /// that registers the row (bench/reduce.cpp -> "reduce").
  std::string suite;
};
std::vector<Workload>& workloads();
/// The device the rows run on: `--device NAME` on the command line, else $EMBER_BENCH_DEVICE,
/// else flex ("flex", "cpu", "cpu_eager", "cuda" or "cuda_eager"). The runner makes it the
/// default device before any row is set up, and times each call until the device has run its
/// queued work.
ember::Device device();
/// Keeps a row's result alive until its call has run (on a lazy device a result nobody holds is
/// dead code and would never be computed; the peers compute theirs).
void keep(ember::Tensor t);
struct Register {
  explicit Register(Workload w, std::source_location at = std::source_location::current());
};

}  // namespace ember::bench

#define EMBER_BENCH_CAT2(a, b) a##b
#define EMBER_BENCH_CAT(a, b) EMBER_BENCH_CAT2(a, b)
/// EMBER_BENCH({.name = "add_16M", .setup = [] { ...; return [=] { ... }; }});
#define EMBER_BENCH(...) \
  static ember::bench::Register EMBER_BENCH_CAT(ember_bench_, __LINE__)(ember::bench::Workload __VA_ARGS__)

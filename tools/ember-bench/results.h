#pragma once
// One ember-bench run: what was run where, and the timings of ember's rows and the peers' rows.
// The run command fills it, the history stores it, the JSON and the table print it.
#include <cstdint>
#include <string>
#include <vector>

#include "machine.h"
#include "stats.h"

namespace ember::benchtool {

/// One ember row on one device: every sample of every round.
struct EmberResult {
  std::string suite, name, device;
  Stats stats;                  // over all samples (ms per call)
  std::vector<double> samples;  // ms per call, in the order they were taken
  double flops = 0;             // per call, when the row declares it
  std::string error;            // non-empty: the row failed on this device
};

/// One row of a peer: its median per round (peers report one figure per row and run).
struct PeerResult {
  std::string peer, row;  // "torch_cpu", "add_16M" or "matmul_f32_2048[openblas]"
  Stats stats;            // over the rounds' figures
  std::vector<double> rounds;
};

struct RunRecord {
  int64_t id = 0;       // the history's run id (0 until stored)
  std::string started;  // UTC, ISO 8601
  std::string commit;   // git commit of the build (or --commit)
  bool dirty = false;
  Machine machine;
  int threads = 2, rounds = 1;
  std::string clock = "wall";
  std::vector<std::string> suites, devices, peers;
  std::string command;  // the command line
  std::vector<EmberResult> ember;
  std::vector<PeerResult> peer_rows;
};

/// The peer rows that an ember row is compared with: `name` itself and `name[library]` rows (for
/// a row pinned to a device, `name@cpu`, those of `name`).
std::vector<const PeerResult*> peers_of(const RunRecord& run, const std::string& name);

}  // namespace ember::benchtool

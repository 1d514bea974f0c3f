#pragma once
// `ember-bench run`: the selected suites' rows on every selected device, several rounds, each
// round followed (or, every other round, preceded) by one run of every peer, so that both sides
// see the same machine load; then the medians, spread and ember/peer ratios, printed, as JSON,
// and appended to the history.
#include <string>
#include <vector>

#include "results.h"
#include "runner.h"

namespace ember::benchtool {

struct RunOptions {
  std::vector<std::string> suites;   // "all" for every suite
  std::string filter;                // rows whose name contains it (or a '|' alternative)
  std::vector<std::string> devices;  // empty or "all": every device available here
  std::vector<std::string> peers;    // paths or names; "auto": the suites' own; empty: none
  int rounds = 3, threads = 2;
  bench::TimingRules rules;
  double peer_timeout_s = 900;
  std::string history;  // empty: nothing is recorded
  std::string commit;   // empty: the commit the binary was built from
  bool json = false;    // JSON on stdout, the table on stderr
  bool verbose = false;
  std::string command;  // the command line, for the history
};

/// Every suite that some row belongs to, sorted.
std::vector<std::string> suite_names();
/// The peers a suite is compared with by default (names; GPU peers only for cuda devices).
std::vector<std::string> default_peers(const std::string& suite, bool host, bool cuda);
/// Runs, prints and records; returns the process exit status. Throws ToolError.
int run_command(const RunOptions& o);

/// The run as ember-bench's JSON document (schema "ember-bench/run/1").
std::string run_json(const RunRecord& run, const std::string& history);
/// The run as a table: one line per ember row and device and matching peer row.
std::string run_table(const RunRecord& run);

}  // namespace ember::benchtool

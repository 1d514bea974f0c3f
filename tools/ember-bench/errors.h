#pragma once
// ember-bench's own failures: a message for the user and the exit status that goes with it.
#include <stdexcept>
#include <string>

namespace ember::benchtool {

enum ExitCode : int {
  kRegression = 1,     // `compare` found a regression beyond the threshold
  kUsage = 2,          // an unknown command, suite, device, peer or option
  kPeerFailed = 3,     // a peer crashed, timed out or wrote no rows
  kHistoryFailed = 4,  // the history file cannot be opened, read or written
  kRowsFailed = 5,     // the run finished but some rows failed (their errors are in the results)
};

struct ToolError : std::runtime_error {
  ToolError(ExitCode c, const std::string& what) : std::runtime_error(what), code(c) {}
  ExitCode code;
};

}  // namespace ember::benchtool

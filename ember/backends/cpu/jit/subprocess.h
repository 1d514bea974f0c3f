#pragma once
// Running the host compiler: posix_spawn (no shell, no fork of a large process), output captured
// through a pipe, a deadline, cancellation, and the whole process group killed and reaped on
// timeout, so no compiler is left running and no zombie is left behind.
#include <atomic>
#include <string>
#include <vector>

namespace ember::cpu::jit {

struct ProcessOptions {
  double timeout_s = 60;
  const std::atomic<bool>* cancel = nullptr;  // polled while the child runs
  std::vector<std::string> env;               // "NAME=value" entries that replace the parent's
  size_t max_output = 64 << 10;               // bytes of stdout+stderr kept (the rest is drained)
};

struct ProcessResult {
  bool started = false;  // false: it could not be spawned (`error` says why)
  int exit_code = -1;    // the exit status when it exited
  int signal = 0;        // the signal that ended it, 0 when none
  bool timed_out = false;
  bool cancelled = false;
  std::string output;  // stdout and stderr, interleaved as written
  std::string error;
  double seconds = 0;

  bool success() const {
    return started && !timed_out && !cancelled && signal == 0 && exit_code == 0;
  }
  /// "exited with status 1", "killed by signal 11 (Segmentation fault)", "timed out after 2 s".
  std::string describe() const;
};

/// Runs argv[0] (a path) with arguments argv[1..] and waits for it within the options' limits.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options);

/// `name` when it holds a '/', else the first executable `name` on PATH; "" when there is none.
std::string find_program(const std::string& name);

}  // namespace ember::cpu::jit

#pragma once
// The history file: every run's results in one SQLite database, keyed by git commit, machine
// fingerprint and device. Each run is written in one transaction, so a failed or interrupted
// write leaves the file as it was. The schema is versioned (PRAGMA user_version and the meta
// table); a file of a newer schema is refused rather than changed.
#include <cstdint>
#include <string>
#include <vector>

#include "results.h"

struct sqlite3;

namespace ember::benchtool {

inline constexpr int kSchemaVersion = 1;

class History {
 public:
  /// Opens (creating when `create`) the file and its schema. Throws ToolError(kHistoryFailed)
  /// when it cannot be opened or written, is not an ember-bench history, or is of a newer schema.
  explicit History(const std::string& path, bool create = true);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  /// Stores `run` (machine, run, results) in one transaction; sets and returns its id.
  int64_t append(RunRecord& run);
  /// Every run without results, oldest first.
  std::vector<RunRecord> runs();
  /// One run with its results; throws ToolError(kUsage) when there is none.
  RunRecord load(int64_t id);
  /// The runs a spec names: a run id ("12" or "#12") or a commit (a prefix of at least 4 hex
  /// digits), oldest first. Throws ToolError(kUsage) when it names none.
  std::vector<int64_t> resolve(const std::string& spec);
  const std::string& path() const { return path_; }

 private:
  void exec(const std::string& sql);
  [[noreturn]] void fail(const std::string& what);
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace ember::benchtool

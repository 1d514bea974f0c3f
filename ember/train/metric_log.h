#pragma once
// Metric logs on disk: one row per epoch, as CSV or JSON lines (chosen by the file extension:
// ".csv", or ".jsonl"/".json"). The whole file is rewritten atomically after every epoch from the
// Learner's history, so a log never has a half-written line and a resumed run's log matches an
// uninterrupted one.
#include <string>
#include <vector>

#include "ember/train/renderer.h"

namespace ember::train {

enum class LogFormat { csv, jsonl };

/// The format for `path` by extension; throws ValueError for any other extension.
LogFormat log_format_for(const std::string& path);

/// Writes `history` to `path` (temporary file, fsync, rename). Columns: epoch, seconds, then
/// "train.<metric>" and "valid.<metric>" in first-seen order (every train column, then every
/// valid one; an epoch without a metric leaves its CSV cell empty and its JSON key out). NaN is
/// written as "nan" in CSV and null in JSON (infinities: "inf" in CSV, null in JSON, which reads
/// back as NaN). Throws store::IOError when the file cannot be written (the old file stays).
void write_metric_log(const std::string& path, const std::vector<EpochRecord>& history);
/// Reads a log written by write_metric_log (either format); throws ValueError naming the file and
/// line for malformed content, store::IOError when it cannot be opened.
std::vector<EpochRecord> read_metric_log(const std::string& path);

/// The history as one JSON array (what checkpoints store), and back; exact for finite doubles.
std::string history_to_json(const std::vector<EpochRecord>& history);
std::vector<EpochRecord> history_from_json(const std::string& json);

}  // namespace ember::train

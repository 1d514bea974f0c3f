#pragma once
// A sharded on-disk dataset for data larger than memory: records (lists of tensors) appended by a
// DatasetWriter to shard files, found through an index; read by a ShardedDataset, whose tensors
// are views of the memory-mapped shards (no copy). A reader may open the dataset while a writer
// (in another process) is still appending: refresh() makes the records indexed since visible.
//
// Layout of a dataset directory:
//   index.bin          "EMBERSH1", 8 reserved bytes, then one 24-byte entry per record: shard
//                      number (u32), 4 reserved bytes, offset (u64) and length (u64) in that shard
//   shard-NNNNN.bin    records, each 64-byte aligned: "EMRC", field count (u32), per field its
//                      dtype (u8), rank (u8), 6 reserved bytes, data offset in the record (u64),
//                      byte count (u64) and sizes (rank x i64); each field's elements 64-byte
//                      aligned, contiguous, little-endian
// A record's bytes are written before its index entry, and an entry is one small append, so a
// reader never sees an entry whose record is incomplete, and a writer that dies leaves at worst
// unindexed bytes at the end of a shard (and a partial entry, which the next writer drops).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/data/example.h"
#include "ember/tensor.h"

namespace ember::data {

/// One item of a sharded dataset: its fields, in the order they were written.
using Record = std::vector<Tensor>;

struct DatasetWriterOptions {
  /// A shard is closed and the next one started once it holds at least this many bytes.
  uint64_t shard_bytes = uint64_t(256) << 20;
  /// fdatasync each record before indexing it (survives power loss, at a cost per record);
  /// without it records are durable after flush() or close().
  bool sync_each = false;
};

/// Appends records to the dataset in `dir` (created if missing; records already there are kept
/// and new ones go to a new shard). One writer per directory at a time: a second one throws
/// ValueError (an advisory lock on the index). Not thread-safe: one thread writes.
class DatasetWriter {
 public:
  explicit DatasetWriter(const std::string& dir, const DatasetWriterOptions& o = {});
  ~DatasetWriter();
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;
  /// Appends one record (tensors on any device; they are copied out contiguous).
  void write(const Record& fields);
  void write(const Example& e) { write(Record{e.first, e.second}); }
  /// Records in the dataset, earlier writers' included.
  int64_t size() const;
  /// Makes everything written so far durable (fdatasync of shard and index).
  void flush();
  /// flush() and release the directory (the destructor does this too, ignoring errors).
  void close();

  struct State;

 private:
  std::unique_ptr<State> s_;
};

/// The records of the dataset in `dir`. get() returns tensors over the mapped shard (read-only
/// in effect: writing into one copies the page for this process alone). Safe to read from
/// several threads; refresh() may run while they do.
class ShardedDataset final : public Dataset<Record> {
 public:
  explicit ShardedDataset(const std::string& dir);
  Record get(int64_t i) const override;
  /// Records indexed as of the last refresh (or of opening).
  int64_t size() const override;
  /// Re-reads the index: records a writer appended since become visible. Returns the new size.
  int64_t refresh();

  struct State;

 private:
  std::shared_ptr<State> s_;
};

/// Records of two fields as (input, target) examples, for StackBatcher.
DatasetPtr<Example> as_examples(DatasetPtr<Record> records);

}  // namespace ember::data

#pragma once
// TensorBoard event files: the writer behind LearnerOptions::tensorboard_dir, and a reader that
// checks every record. A file is a sequence of records
//   uint64 length (little-endian), uint32 masked CRC-32C of those 8 bytes,
//   `length` bytes of data, uint32 masked CRC-32C of the data,
// each holding one tensorflow.Event protocol buffer: the first says file_version "brain.Event:2",
// the others one scalar each (wall_time, step, summary { value { tag, simple_value } }).
// TensorBoard shows every file named events.out.tfevents.* in a directory as one run.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ember::train {

/// One scalar summary of an event file. TensorBoard stores the value as a float.
struct ScalarEvent {
  std::string tag;  // "train/loss", "valid/accuracy", "batch/train/loss", ...
  int64_t step = 0;
  double wall_time = 0;  // seconds since the Unix epoch
  float value = 0;
};

/// What an event file holds, in file order.
struct EventFile {
  std::string file_version;  // of the first event that has one ("brain.Event:2")
  std::vector<ScalarEvent> scalars;
  int64_t records = 0;  // every record, scalar or not
};

/// Writes one event file; each record reaches the operating system when it is added (one
/// write(2)), so a crash loses nothing added before it.
class TensorBoardWriter {
 public:
  /// Creates `dir` (and its parents) and a new file events.out.tfevents.<seconds>.<host> in it
  /// (".1", ".2", ... appended when the name is taken), whose first record is the file_version
  /// event. Throws store::IOError naming the path when it cannot.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  /// Appends a scalar; `wall_time` < 0 stamps the current time. NaN and infinities are written
  /// as they are (TensorBoard shows them). Throws store::IOError when the write fails.
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time = -1);
  /// fsync: the records so far survive a power loss too.
  void sync();
  /// The file being written.
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& data);
  std::string path_;
  int fd_ = -1;
};

/// Reads and checks an event file: both CRCs of every record and the protocol buffers. Throws
/// store::IOError when it cannot be read, store::TruncatedError for a file that ends inside a
/// record, store::FormatError for a CRC mismatch or an undecodable event (each naming the file,
/// the record and its byte offset). Summary values other than simple_value are skipped.
EventFile read_event_file(const std::string& path);
/// The event files in `dir` (not its subdirectories), sorted by name; none for a missing dir.
std::vector<std::string> event_files(const std::string& dir);
/// The scalars of every event file in `dir`, file by file in name order.
std::vector<ScalarEvent> read_event_dir(const std::string& dir);
/// Rewrites (atomically) each event file in `dir` that holds scalars `keep` rejects, without
/// those records; every other record is kept byte for byte, and a record cut short at the end of a
/// file (a write interrupted by a power loss or a full disk) is dropped too. What a resumed fit
/// calls, so the steps it runs again are not in the directory twice. Throws read_event_file's
/// errors for any other damage.
void drop_scalars(const std::string& dir,
                  const std::function<bool(const std::string& tag, int64_t step)>& keep);

}  // namespace ember::train

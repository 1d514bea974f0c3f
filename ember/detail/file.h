#pragma once
// Reading files that a user (or an attacker) names: opening never blocks (a FIFO without a
// writer, a terminal), anything but a regular file is refused (directories, FIFOs, sockets,
// devices such as /dev/zero, which never end), and reads are positioned (pread), so a file that
// shrinks after it was opened gives a short read instead of a SIGBUS. Errors are returned as
// text; each reader throws its own error type. Private to the library.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ember::detail {

/// A regular file open for reading; copies share the descriptor, closed with the last one.
class ReadFile {
 public:
  /// Opens `path`; on failure the result is empty and `error` says why ("cannot open: No such
  /// file or directory", "not a regular file: a directory", ...).
  static ReadFile open(const std::string& path, std::string& error);
  ReadFile() = default;
  explicit operator bool() const { return fd_ != nullptr; }
  /// The size when it was opened.
  uint64_t size() const { return size_; }
  /// Reads up to `n` bytes at `offset` into `dst`; returns how many were read (fewer at the end
  /// of the file), or -1 with `error` set.
  int64_t read_at(uint64_t offset, void* dst, size_t n, std::string& error) const;
  /// Reads all `n` bytes at `offset`, or returns false with `error` set (a short read says the
  /// file now ends at byte X: it shrank after it was opened).
  bool read_exact(uint64_t offset, void* dst, size_t n, std::string& error) const;

 private:
  std::shared_ptr<const int> fd_;
  uint64_t size_ = 0;
};

/// A reader's bytes: an open regular file, or a buffer in memory (a download, a fuzz input).
struct ByteSource {
  ReadFile file;
  std::string bytes;
  bool in_memory = false;
  uint64_t size() const { return in_memory ? bytes.size() : file.size(); }
  /// All `n` bytes at `offset`, or false with `error` set.
  bool read(uint64_t offset, void* dst, size_t n, std::string& error) const;
};

/// The whole of the regular file `path` into `out`; false with `error` set when it cannot be
/// read or is larger than `max_bytes` (checked before anything is allocated).
bool read_whole_file(const std::string& path, uint64_t max_bytes, std::string& out,
                     std::string& error);

}  // namespace ember::detail

#pragma once
// Files written atomically: the bytes go to a hidden temporary file beside the target, which is
// fsynced and renamed over the target only when complete. A crash or an exception at any point
// leaves the old file (or no file) in place, never a half-written one.
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::store {

class AtomicFile {
 public:
  /// Creates the temporary file; throws IOError naming `target` when it cannot.
  explicit AtomicFile(const std::string& target);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Deletes the temporary file unless commit() ran.
  ~AtomicFile();
  /// Appends bytes; throws IOError.
  void write(const void* data, size_t n);
  void write(std::string_view s) { write(s.data(), s.size()); }
  /// Writes bytes at `offset` of the temporary file (for formats that patch a header written
  /// earlier, such as zip's local headers); throws IOError.
  void write_at(uint64_t offset, const void* data, size_t n);
  /// fsync, close, rename over the target, fsync the directory; throws IOError (also, leaving
  /// the target as it was, when a tensor mapped from a file that was cut was read while the
  /// file was written: its bytes would be zeros; see ember/detail/file.h).
  void commit();
  const std::string& target() const { return target_; }

 private:
  [[noreturn]] void fail(const std::string& what);
  std::string target_;
  std::string tmp_;
  int fd_ = -1;
  bool committed_ = false;
  uint64_t faults_;  // ember::detail::map_faults() when it was created
};

/// Replaces `path` with `bytes` atomically.
void write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace ember::store

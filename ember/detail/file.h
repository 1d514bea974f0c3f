#pragma once
// Reading files that a user (or an attacker) names: opening never blocks (a FIFO without a
// writer, a terminal), anything but a regular file is refused (directories, FIFOs, sockets,
// devices such as /dev/zero, which never end), and reads are positioned (pread), so a file that
// shrinks after it was opened gives a short read instead of a SIGBUS. Tensor bytes may also be
// mapped (FileMap): copy-on-write, checked against the file's size when mapped and again when a
// tensor over them is handed out. A file cut while mapped (another process truncates it) would
// raise SIGBUS on the next touch of a page past its new end: a SIGBUS handler turns such a fault
// into a zero page and marks the mapping damaged, and ember raises an IOError naming the file
// for the op that touched it and for every later op or read of its tensors (see
// map_faults()). Errors are returned as text; each reader throws its own error type. Private to
// the library.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ember::detail {

class FileMap;

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
  /// Bytes [offset, offset + n) mapped copy-on-write (see FileMap); null with `error` set when
  /// n is 0, the file system cannot map the file, or the file no longer holds those bytes.
  /// `prefetch` asks the kernel to start reading them now (MADV_WILLNEED), in the background.
  std::shared_ptr<const FileMap> map(uint64_t offset, uint64_t n, std::string& error,
                                     bool prefetch = false) const;
  /// Whether the file still holds at least `end` bytes (fstat now); false with `error` set
  /// when it shrank. Touching mapped bytes below `end` cannot then raise SIGBUS unless the
  /// file is cut again later.
  bool still_holds(uint64_t end, std::string& error) const;
  /// Before large reads of `ranges` (offset, length; sorted, inside the file): drops from the
  /// page cache the few pages of a range that are cached while most of it is not. Such strays
  /// (a zip's local headers, read when the archive is opened, sit between its entries' bytes)
  /// make the kernel fall back to single-page reads for the rest of each read-ahead window it
  /// meets them in: reads from a cold cache take twice as long. A range mostly cached is left
  /// alone. Only a hint: nothing is reported.
  void drop_stray_pages(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) const;

 private:
  std::shared_ptr<const int> fd_;
  std::shared_ptr<const std::string> path_;
  uint64_t size_ = 0;
};

/// A private mapping of a range of a file: MAP_PRIVATE, readable and writable, so writing into
/// a tensor over it copies that page for this mapping alone and never reaches the file (nor any
/// other mapping of it: each tensor's storage gets its own). Nothing is read until a page is
/// touched. The last owner unmaps it.
class FileMap {
 public:
  /// Takes over the mapping [base, base + length) of the file `path`; `slot` is its entry in the
  /// SIGBUS guard's table (see map_faults()).
  FileMap(void* base, size_t length, char* data, int slot, std::shared_ptr<const std::string> path)
      : base_(base), length_(length), data_(data), slot_(slot), path_(std::move(path)) {}
  ~FileMap();
  FileMap(const FileMap&) = delete;
  FileMap& operator=(const FileMap&) = delete;
  /// The first byte of the range asked for.
  char* data() const { return data_; }
  /// Whether a page of it was touched after the file was cut (it now reads as zeros).
  bool damaged() const;
  const std::string& path() const { return *path_; }

 private:
  void* base_;  // page-aligned start of the mapping
  size_t length_;
  char* data_;
  int slot_;
  std::shared_ptr<const std::string> path_;
};

/// How many faults on mapped pages of cut files the SIGBUS guard has absorbed in this process
/// (each became a zero page; its mapping is damaged()). Zero in every program that never cuts a
/// mapped file, so the checks below cost one relaxed load on the paths that call them.
extern std::atomic<uint64_t> g_map_faults;
inline uint64_t map_faults() { return g_map_faults.load(std::memory_order_relaxed); }
/// The files of the live mappings that are damaged (each once).
std::vector<std::string> damaged_files();

/// Whether readers map tensor bytes: `requested` (an option, on by default) unless the
/// environment variable EMBER_MMAP is "0", "off" or "false".
bool mmap_enabled(bool requested);

/// A reader's bytes: an open regular file, or a buffer in memory (a download, a fuzz input).
struct ByteSource {
  ReadFile file;
  std::string bytes;
  bool in_memory = false;
  /// Whether tensor bytes are mapped from `file` (asked for, and a file, not memory); headers
  /// and pickles are always read through `file`.
  bool mapped = false;
  /// Mapped bytes are read ahead as they are mapped (ReadFile::map's `prefetch`).
  bool prefetch = false;
  uint64_t size() const { return in_memory ? bytes.size() : file.size(); }
  /// All `n` bytes at `offset`, or false with `error` set.
  bool read(uint64_t offset, void* dst, size_t n, std::string& error) const;
};

/// The whole of the regular file `path` into `out`; false with `error` set when it cannot be
/// read or is larger than `max_bytes` (checked before anything is allocated).
bool read_whole_file(const std::string& path, uint64_t max_bytes, std::string& out,
                     std::string& error);

}  // namespace ember::detail

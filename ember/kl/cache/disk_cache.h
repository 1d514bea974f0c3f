#pragma once
// The on-disk half of the kernel cache: one directory per target and toolchain,
//   <root>/v<schema>/<target>-<toolchain>/<id>.so    the image, published by write-to-temp + rename
//                                         <id>.meta  key and fingerprint digests, size, checksum
//                                         <id>.lock  flock'd while one process compiles the key
//   <root>/v<schema>/toolchains/<digest>             a toolchain's identity, keyed by quick_id
// <root> is EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else ~/.cache/ember. An entry is used
// only when its meta matches and its image's checksum is right, so a truncated or overwritten
// file is rebuilt, never loaded. Readers take no lock: rename makes every file whole or absent.
// Internal to ember/kl/cache.
#include <atomic>
#include <cstdint>
#include <string>

#include "ember/kl/toolchain.h"

namespace ember::kl::cache {

/// Bumped when the layout or the meta format changes; old trees are then left alone.
inline constexpr int kSchema = 1;

/// The cache root from the environment ("" when neither EMBER_CACHE_DIR, XDG_CACHE_HOME nor
/// HOME says where).
std::string default_root();
/// The default size cap: EMBER_CACHE_MAX_MB, else 256 MiB.
int64_t default_max_bytes();

/// What a directory allows: read and write, read only (entries there load, new ones stay in
/// memory), or nothing (memory only: unusable, unwritable and unreadable, or mounted noexec).
enum class DirMode { kReadWrite, kReadOnly, kMemory };

enum class Lookup { kMissing, kCorrupt, kFound };

/// A previously found identity, or !ok; `write_identity` records one (best effort).
ToolchainIdentity read_identity(const std::string& root, const std::string& quick_id);
void write_identity(const std::string& root, const std::string& quick_id,
                    const ToolchainIdentity& id);

class DiskCache {
 public:
  /// Opens (creating it when it can) <root>/v<schema>/<dir_name>; `assume_noexec` treats the
  /// directory as mounted noexec (for tests where mounting one is impossible).
  DiskCache(const std::string& root, const std::string& dir_name, int64_t max_bytes,
            bool assume_noexec);

  DirMode mode() const { return mode_.load(std::memory_order_relaxed); }
  /// Why the mode is not kReadWrite ("" when it is).
  const std::string& reason() const { return reason_; }
  const std::string& dir() const { return dir_; }
  /// Stop writing (the directory turned out not to hold loadable code). The worker's only.
  void degrade(DirMode mode, std::string reason);

  /// The file name stem of (key, fingerprint).
  static std::string entry_id(const std::string& key, const std::string& fingerprint);
  std::string image_path(const std::string& id) const { return dir_ + "/" + id + ".so"; }
  /// Checks the entry's meta and image; kFound marks it used (for eviction order).
  Lookup lookup(const std::string& id, const std::string& key, const std::string& fingerprint);
  /// Publishes the image, then its meta; false and `*error` when it cannot.
  bool publish(const std::string& id, const std::string& key, const std::string& fingerprint,
               const std::string& image, std::string* error);
  void remove(const std::string& id);
  /// Removes the oldest entries while the tree under the root is over the cap (and stale
  /// temporaries); returns how many entries went. Cheap when a running estimate is under it.
  int64_t evict_if_needed(int64_t just_added);
  /// The tree's size in bytes as of the last scan (-1 before any).
  int64_t scanned_bytes() const { return scanned_bytes_; }

  /// Holds the per-key lock while alive. Waiting is bounded: after `max_wait_s` (or on cancel)
  /// the caller proceeds unlocked, which at worst compiles a key twice (rename keeps it safe).
  class KeyLock {
   public:
    KeyLock(const DiskCache& cache, const std::string& id, double max_wait_s,
            const std::atomic<bool>* cancel);
    KeyLock(const KeyLock&) = delete;
    KeyLock& operator=(const KeyLock&) = delete;
    ~KeyLock();
    bool held() const { return held_; }

   private:
    int fd_ = -1;
    bool held_ = false;
  };

 private:
  int64_t scan_and_evict();
  std::string root_, vroot_, dir_, reason_;
  std::atomic<DirMode> mode_{DirMode::kMemory};  // only ever degrades; read without a lock
  int64_t max_bytes_;
  int64_t estimate_ = -1;  // bytes under vroot_ as far as this process knows
  int64_t scanned_bytes_ = -1;
  int publishes_since_scan_ = 0;
};

}  // namespace ember::kl::cache

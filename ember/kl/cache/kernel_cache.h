#pragma once
// The kernel cache: compiled kernels by key, in memory and on disk, compiled on a background
// worker so that nothing waits on the compiler.
//
//   auto h = cache.request(key, source, {"k0", "k1"});  // returns at once
//   if (h.ready() && h.get().ok) h.get().fns[0](&args, 0, n);   // else run the eager kernel
//
// A key names one (source, symbols) pair: the caller's canonical IR hash and specialisation
// (opaque to the cache, any string); the toolchain's fingerprint is added here. Entries found in
// memory or on disk resolve inside request(); others compile on the worker, one at a time.
// When the toolchain is missing or broken, or a source fails to compile, the handle resolves
// with ok = false (and a one-time warning), never an exception: the caller runs eager kernels.
// When no directory can hold code, entries live in memory (one warning).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/kl/toolchain.h"

namespace ember::kl {

/// The entry points of one compiled source, or why there are none.
struct KernelSet {
  bool ok = false;
  std::string error;
  std::vector<KernelFn> fns;       // in the order the symbols were requested
  std::shared_ptr<Module> module;  // keeps the code loaded while any handle lives
};

namespace detail {
struct CacheEntry;
}

class KernelHandle {
 public:
  KernelHandle() = default;
  /// Whether this handle came from a request (a default-constructed one did not).
  bool valid() const { return entry_ != nullptr; }
  /// Non-blocking: whether get() would return at once (compiled, loaded, or failed).
  bool ready() const;
  /// The kernels, waiting for the compile if it is still running.
  const KernelSet& get() const;

 private:
  friend class KernelCache;
  explicit KernelHandle(std::shared_ptr<detail::CacheEntry> e) : entry_(std::move(e)) {}
  std::shared_ptr<detail::CacheEntry> entry_;
};

struct CacheStats {
  int64_t requests = 0;
  int64_t memory_hits = 0;  // the key was already known in this process
  int64_t disk_hits = 0;    // loaded from the directory without compiling
  int64_t compiles = 0;     // compiler runs
  int64_t failures = 0;     // requests that resolved without kernels
  int64_t corrupt = 0;      // disk entries found damaged (and rebuilt)
  int64_t evicted = 0;      // disk entries removed to keep under the size cap
  double compile_seconds = 0;
  /// One line: "requests 3, memory hits 1, disk hits 1, compiles 1 (0.19 s), failures 0, ...".
  std::string to_string() const;
};

struct KernelCacheOptions {
  std::string root;            // "" = EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, ~/.cache/ember
  int64_t max_bytes = 0;       // the disk cap; 0 = EMBER_CACHE_MAX_MB, else 256 MiB
  bool assume_noexec = false;  // treat the directory as mounted noexec (tests)
  /// Where warnings and debug lines go (one line each, no newline); default: stderr.
  std::function<void(const std::string&)> message;
  int debug = -1;  // print each compile and hit; -1 = EMBER_FUSION_DEBUG
};

class KernelCache {
 public:
  explicit KernelCache(std::shared_ptr<Toolchain> toolchain, KernelCacheOptions options = {});
  /// Cancels a running compile (its child is killed) and joins the worker; handles still
  /// pending resolve as failed.
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  /// The kernels `symbols` of `source` under `key`; returns at once.
  KernelHandle request(const std::string& key, std::string source,
                       std::vector<std::string> symbols);
  /// The handle for `key` when this process already asked for it (no source needed).
  KernelHandle find(const std::string& key) const;
  /// Waits until no compile is queued or running.
  void wait_idle() const;

  CacheStats stats() const;
  /// The directory entries go to, "" before the toolchain is identified or when memory only.
  std::string directory() const;
  /// Whether entries are written to disk (false: memory only, or not yet known).
  bool persistent() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::kl

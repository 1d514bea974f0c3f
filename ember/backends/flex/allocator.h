#pragma once
// A caching host allocator: freed blocks are kept by size class and reused, so repeated ops do
// not pay for fresh pages. EMBER_FLEX_CACHE_MB caps what is kept (default 4096). Built with
// AddressSanitizer it allocates each storage exactly and caches nothing, so the sanitizer sees
// every overrun and use after free.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ember/backends/backend.h"

namespace ember::flex {

std::shared_ptr<Storage> allocate_host(size_t nbytes, Device place);
/// Returns every cached block to the system.
void empty_cache();
/// Bytes currently held in the cache (not in use).
size_t cached_bytes();
/// True in AddressSanitizer builds: exact allocations, nothing cached.
bool allocates_exactly();

/// The host storage one group of work holds (an ember server's session: its clients' tensors
/// and every temporary its ops allocate), refusing with OutOfMemory, naming the op, a storage
/// over `max_one` bytes or one that would take the total past `limit`. Storages keep the meter they were counted against until freed,
/// on any thread; the meter lives until its creator and every such storage let go of it.
class StorageMeter {
 public:
  static StorageMeter* create(size_t limit, size_t max_one = SIZE_MAX);
  void release();  // the creator's reference
  size_t bytes() const { return size_t(live_.load(std::memory_order_relaxed)); }
  size_t peak() const { return size_t(peak_.load(std::memory_order_relaxed)); }
  size_t limit() const { return limit_; }

  /// While alive, the calling thread's host allocations count against `m` (null: none).
  class Scope {
   public:
    explicit Scope(StorageMeter* m);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StorageMeter* prev_;
  };

 private:
  friend std::shared_ptr<Storage> allocate_host(size_t, Device);
  friend struct MeterAccess;
  StorageMeter(size_t limit, size_t max_one) : limit_(limit), max_one_(max_one) {}
  void charge(size_t n);
  void refund(size_t n);
  const size_t limit_, max_one_;
  std::atomic<int64_t> live_{0}, peak_{0};
  std::atomic<int64_t> refs_{1};
};

}  // namespace ember::flex

#include "ember/backends/flex/allocator.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "ember/error.h"

namespace ember::flex {
namespace {

constexpr size_t kAlign = 64;

// Under AddressSanitizer every storage is its own allocation of exactly its size, freed at once:
// size classes would leave slack past a tensor's end where an overrun goes unseen, and reuse
// would turn a use after free into a read of someone else's tensor.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kExact = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kExact = true;
#else
constexpr bool kExact = false;
#endif
#else
constexpr bool kExact = false;
#endif

size_t size_class(size_t n) {
  if (kExact) return n;
  if (n <= kAlign) return kAlign;
  if (n < (size_t(1) << 20)) {  // powers of two below 1 MiB
    size_t c = kAlign;
    while (c < n) c <<= 1;
    return c;
  }
  constexpr size_t kMiB = size_t(1) << 20;  // whole MiB above
  return (n + kMiB - 1) / kMiB * kMiB;
}

// Size classes below 1 MiB (powers of two from kAlign) index an array of free lists: taking and
// giving back a small block, which every tiny op does, is a lock and a vector end, no hashing.
constexpr int kSmallClasses = 14;  // 64 B ... 512 KiB
int small_index(size_t cls) {
  if (kExact || cls >= (size_t(1) << 20)) return -1;
  return __builtin_ctzll(cls) - 6;  // kAlign = 2^6
}

struct Cache {
  std::mutex mu;
  std::vector<void*> small[kSmallClasses];
  std::unordered_map<size_t, std::vector<void*>> large;
  size_t held = 0;
  size_t limit = [] {
    if (const char* e = std::getenv("EMBER_FLEX_CACHE_MB")) return size_t(std::atoll(e)) << 20;
    return size_t(4096) << 20;
  }();

  std::vector<void*>* list(size_t cls, bool create) {
    const int i = small_index(cls);
    if (i >= 0) return &small[i];
    if (create) return &large[cls];
    auto it = large.find(cls);
    return it == large.end() ? nullptr : &it->second;
  }
  // Size classes are multiples of kAlign, as aligned_alloc wants; exact sizes need not be.
  static void* alloc(size_t n) {
    if (!kExact) return std::aligned_alloc(kAlign, n);
    void* p = nullptr;
    return ::posix_memalign(&p, kAlign, std::max<size_t>(n, 1)) == 0 ? p : nullptr;
  }
  void* take(size_t cls) {
    {
      std::lock_guard lock(mu);
      std::vector<void*>* l = list(cls, false);
      if (l && !l->empty()) {
        void* p = l->back();
        l->pop_back();
        held -= cls;
        return p;
      }
    }
    void* p = alloc(cls);
    if (!p) {
      release_all();
      p = alloc(cls);
    }
    if (!p)
      detail::throw_value("empty", "out of host memory allocating " + std::to_string(cls) +
                                       " bytes");
    return p;
  }
  void give(void* p, size_t cls) {
    {
      std::lock_guard lock(mu);
      if (!kExact && held + cls <= limit) {
        list(cls, true)->push_back(p);
        held += cls;
        return;
      }
    }
    std::free(p);
  }
  void release_all() {
    std::lock_guard lock(mu);
    for (auto& v : small) {
      for (void* p : v) std::free(p);
      v.clear();
    }
    for (auto& [c, v] : large)
      for (void* p : v) std::free(p);
    large.clear();
    held = 0;
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: storages may outlive static destruction
  return *c;
}

thread_local StorageMeter* t_meter = nullptr;

}  // namespace

struct MeterAccess {
  static void refund(void* meter, size_t n) { static_cast<StorageMeter*>(meter)->refund(n); }
};

namespace {
// A storage's free_ctx is the meter it was counted against (null: none).
void free_block(void* meter, const Storage& s) {
  ember::detail::track_storage_bytes(-int64_t(s.nbytes));
  if (s.data) cache().give(s.data, size_class(s.nbytes));
  if (meter) MeterAccess::refund(meter, s.nbytes);
}
}  // namespace

StorageMeter* StorageMeter::create(size_t limit, size_t max_one) {
  return new StorageMeter(limit, max_one);
}

void StorageMeter::release() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

void StorageMeter::charge(size_t n) {
  if (n > max_one_) {
    const char* op = ember::detail::current_op();
    throw OutOfMemory(std::string("[") + (op ? op : "empty") + "] a storage of " +
                      std::to_string(n) + " bytes is over the server's limit of " +
                      std::to_string(max_one_) + " bytes per tensor");
  }
  const int64_t now = live_.fetch_add(int64_t(n), std::memory_order_relaxed) + int64_t(n);
  if (now > int64_t(limit_)) {
    live_.fetch_sub(int64_t(n), std::memory_order_relaxed);
    const char* op = ember::detail::current_op();
    throw OutOfMemory(std::string("[") + (op ? op : "empty") + "] " + std::to_string(n) +
                      " bytes more would take this client's tensors and temporaries to " +
                      std::to_string(now) + " bytes, over the server's limit of " +
                      std::to_string(limit_) + " bytes per client");
  }
  refs_.fetch_add(1, std::memory_order_relaxed);
  for (int64_t p = peak_.load(std::memory_order_relaxed);
       now > p && !peak_.compare_exchange_weak(p, now, std::memory_order_relaxed);) {
  }
}

void StorageMeter::refund(size_t n) {
  live_.fetch_sub(int64_t(n), std::memory_order_relaxed);
  release();
}

StorageMeter::Scope::Scope(StorageMeter* m) : prev_(t_meter) { t_meter = m; }
StorageMeter::Scope::~Scope() { t_meter = prev_; }

std::shared_ptr<Storage> allocate_host(size_t nbytes, Device place) {
  auto s = std::make_shared<Storage>();
  s->nbytes = nbytes;
  s->place = place.without_layers();
  StorageMeter* meter = t_meter;
  if (meter) meter->charge(nbytes);  // before the memory is taken: a refusal costs nothing
  try {
    s->data = cache().take(size_class(nbytes));
  } catch (...) {
    if (meter) meter->refund(nbytes);
    throw;
  }
  s->free_fn = free_block;
  s->free_ctx = meter;
  ember::detail::track_storage_bytes(int64_t(nbytes));
  return s;
}

void empty_cache() { cache().release_all(); }
bool allocates_exactly() { return kExact; }
size_t cached_bytes() {
  std::lock_guard lock(cache().mu);
  return cache().held;
}

}  // namespace ember::flex

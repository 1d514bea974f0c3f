// Stream-ordered device memory: CUDA's memory pool (cudaMallocAsync / cudaFreeAsync) with a
// release threshold of "never", so freed blocks stay cached in the pool and the next allocation
// of a similar size costs no driver call. A block is freed on the stream of its last use
// (Storage::last_use), so it is reused only after the work that reads it.
//
// Out of memory: pending frees are waited for, the pool is trimmed to nothing, and the
// allocation retried once; a second failure throws OutOfMemory naming the op, the bytes
// requested and the bytes free, and leaves the device usable.
//
// Small blocks (up to 16 MiB) whose last use was on the device's default stream, the one
// allocations are made on, are kept in a host-side cache (1 GiB at most) and handed out again
// without a driver call: cudaMallocAsync, cudaFreeAsync and the pool queries cost about a
// microsecond each, most of a tiny eager op's budget. The stream orders their reuse as the
// pool would. empty_cache and an out-of-memory retry give them back to the pool first.
//
// While ember::capture records a step (graph.cpp), the capturing thread's allocations come from
// the graph's private pool instead: blocks from cudaMalloc, reused within the capture in its
// stream order, kept for the replays (which write the same addresses) and freed with the graph.
// Blocks of the stream-ordered pool freed during a capture are held back until the graph goes:
// its replays may still read them.
#include <cuda_runtime.h>

#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember/backends/cuda/graph.h"
#include "ember/detail/capture.h"

#include "ember/backends/cuda/runtime.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {

struct Counters {
  std::atomic<int64_t> allocated{0}, peak{0}, allocs{0}, frees{0}, hits{0};
  std::atomic<int64_t> graph_bytes{0};  // held by graphs' private pools
  std::atomic<GraphPool*> capture_pool{nullptr};
  std::once_flag once;
  cudaMemPool_t pool = nullptr;
};
Counters g_dev[64];

constexpr size_t kCacheMaxBlock = size_t(16) << 20;
constexpr int64_t kCacheMaxBytes = int64_t(1) << 30;
struct HostCache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free;  // by rounded size
  int64_t bytes = 0;
};
HostCache g_cache[64];
// The size a cached block is allocated with (and found under).
size_t cached_size(size_t n) { return (n + 511) & ~size_t(511); }

void* take_cached(int dev, size_t n) {
  HostCache& h = g_cache[dev];
  std::lock_guard lock(h.mu);
  auto it = h.free.find(n);
  if (it == h.free.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();
  it->second.pop_back();
  h.bytes -= int64_t(n);
  return p;
}
bool give_cached(int dev, size_t n, void* p) {
  HostCache& h = g_cache[dev];
  std::lock_guard lock(h.mu);
  if (h.bytes + int64_t(n) > kCacheMaxBytes) return false;
  h.free[n].push_back(p);
  h.bytes += int64_t(n);
  return true;
}
// Gives every cached block back to the pool, in the default stream's order.
void drain_cache(int dev) {
  HostCache& h = g_cache[dev];
  std::unordered_map<size_t, std::vector<void*>> blocks;
  {
    std::lock_guard lock(h.mu);
    blocks.swap(h.free);
    h.bytes = 0;
  }
  cudaSetDevice(dev);
  auto stream = cudaStream_t(stream_handle(nullptr, dev));
  for (auto& [n, v] : blocks)
    for (void* p : v)
      if (cudaFreeAsync(p, stream) != cudaSuccess) cudaGetLastError();
}

cudaMemPool_t pool_of(int dev) {
  Counters& c = g_dev[dev];
  std::call_once(c.once, [&] {
    check(cudaDeviceGetDefaultMemPool(&c.pool, dev), "cuda::allocate", "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;  // keep freed blocks cached: never release them at a sync
    check(cudaMemPoolSetAttribute(c.pool, cudaMemPoolAttrReleaseThreshold, &keep),
          "cuda::allocate", "cudaMemPoolSetAttribute");
  });
  return c.pool;
}

int64_t reserved_bytes(cudaMemPool_t pool) {
  uint64_t v = 0;
  if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &v) != cudaSuccess) return 0;
  return int64_t(v);
}

void note_alloc(Counters& c, int64_t n) {
  const int64_t now = c.allocated.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = c.peak.load(std::memory_order_relaxed);
  while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
  }
  c.allocs.fetch_add(1, std::memory_order_relaxed);
}

// Storage::free_fn: in stream order after the last use. Errors are dropped: a destructor must
// not throw, and at process exit the runtime may already be gone.
void free_block(void* ctx, const Storage& s) {
  const int dev = int(reinterpret_cast<intptr_t>(ctx));
  Counters& c = g_dev[dev];
  c.allocated.fetch_sub(int64_t(s.nbytes), std::memory_order_relaxed);
  c.frees.fetch_add(1, std::memory_order_relaxed);
  if (!s.data) return;
  if (GraphPool* p = c.capture_pool.load(std::memory_order_acquire)) {
    p->retain(s.data);  // the graph being captured may read it: freed with the graph
    return;
  }
  Stream* const def = default_stream(dev);
  Stream* last = s.last_use;
  if (!last || stream_device(*last) != dev) last = def;
  if (s.nbytes <= kCacheMaxBlock && last == def && give_cached(dev, cached_size(s.nbytes), s.data))
    return;
  cudaSetDevice(dev);
  if (cudaFreeAsync(s.data, cudaStream_t(stream_handle(last, dev))) != cudaSuccess)
    cudaGetLastError();
}

// A block of a graph's pool, freed back into it (the storage holds the pool).
struct PoolRef {
  std::shared_ptr<GraphPool> pool;
  int dev;
};
void free_pool_block(void* ctx, const Storage& s) {
  auto* r = static_cast<PoolRef*>(ctx);
  Counters& c = g_dev[r->dev];
  c.allocated.fetch_sub(int64_t(s.nbytes), std::memory_order_relaxed);
  c.frees.fetch_add(1, std::memory_order_relaxed);
  if (s.data) r->pool->give(s.data);
  delete r;
}

// cudaFree waits for the device: not while a capture is open. Blocks of graphs that go during
// another capture are freed when it ends.
std::mutex g_later_mu;
std::vector<std::pair<void*, int>> g_free_later;

void free_now_or_later(void* p, int dev) {
  if (detail::active_capture()) {
    std::lock_guard lock(g_later_mu);
    g_free_later.emplace_back(p, dev);
    return;
  }
  cudaSetDevice(dev);
  if (cudaFree(p) != cudaSuccess) cudaGetLastError();
}

}  // namespace

GraphPool::GraphPool(int dev) : dev_(dev) {}

GraphPool::~GraphPool() {
  for (void* p : blocks_) free_now_or_later(p, dev_);
  g_dev[dev_].graph_bytes.fetch_sub(bytes_, std::memory_order_relaxed);
  // Blocks of the stream-ordered pool that the graph kept from being reused.
  if (!retained_.empty()) {
    cudaSetDevice(dev_);
    auto stream = cudaStream_t(stream_handle(nullptr, dev_));
    for (void* p : retained_)
      if (cudaFreeAsync(p, stream) != cudaSuccess) cudaGetLastError();
  }
}

void* GraphPool::take(size_t nbytes, bool fresh) {
  const size_t n = (nbytes + 511) & ~size_t(511);
  std::lock_guard lock(mu_);
  auto it = free_.lower_bound(n);
  if (!fresh && it != free_.end() && it->first <= 2 * n) {
    void* p = it->second;
    free_.erase(it);
    return p;
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    const char* op = detail::current_op();
    throw OutOfMemory(std::string("[") + (op ? op : "empty") + "] out of memory on cuda:" +
                      std::to_string(dev_) + " inside ember::capture: requested " +
                      std::to_string(nbytes) + " bytes for the graph's private pool (" +
                      cudaGetErrorName(e) + ")");
  }
  blocks_.push_back(p);
  sizes_[p] = n;
  bytes_ += int64_t(n);
  g_dev[dev_].graph_bytes.fetch_add(int64_t(n), std::memory_order_relaxed);
  return p;
}

void GraphPool::give(void* p) {
  std::lock_guard lock(mu_);
  free_.emplace(sizes_.at(p), p);
}

void GraphPool::retain(void* p) {
  std::lock_guard lock(mu_);
  retained_.push_back(p);
}

int64_t GraphPool::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

bool in_graph_pool(const Storage& s) { return s.free_fn == free_pool_block; }

void set_capture_pool(int dev, const std::shared_ptr<GraphPool>& pool) {
  g_dev[dev].capture_pool.store(pool.get(), std::memory_order_release);
  if (pool) return;
  std::vector<std::pair<void*, int>> later;
  {
    std::lock_guard lock(g_later_mu);
    later.swap(g_free_later);
  }
  for (auto [p, d] : later) free_now_or_later(p, d);
}

namespace {
std::shared_ptr<Storage> allocate_in_pool(size_t nbytes, int dev, const std::shared_ptr<GraphPool>& pool) {
  auto s = std::make_shared<Storage>();
  s->nbytes = nbytes;
  s->place = Device::cuda(dev);
  if (nbytes) s->data = pool->take(nbytes);
  note_alloc(g_dev[dev], int64_t(nbytes));
  s->free_fn = free_pool_block;
  s->free_ctx = new PoolRef{pool, dev};
  return s;
}
}  // namespace

std::shared_ptr<Storage> allocate(size_t nbytes, int dev) {
  check_index(dev, "empty");
  set_device(dev);
  Counters& c = g_dev[dev];
  if (c.capture_pool.load(std::memory_order_acquire)) [[unlikely]] {
    if (detail::Capture* cap = capture_of(dev))
      return allocate_in_pool(nbytes, dev, capture_pool_of(*cap));
  }
  cudaMemPool_t pool = pool_of(dev);
  auto stream = cudaStream_t(stream_handle(nullptr, dev));
  auto s = std::make_shared<Storage>();
  s->nbytes = nbytes;
  s->place = Device::cuda(dev);
  const bool small = nbytes <= kCacheMaxBlock;
  if (nbytes && small) s->data = take_cached(dev, cached_size(nbytes));
  if (s->data) {
    c.hits.fetch_add(1, std::memory_order_relaxed);
  } else if (nbytes) {
    // A small block is allocated at the size it is cached under, so that it can be when freed.
    const size_t want = small ? cached_size(nbytes) : nbytes;
    const int64_t before = reserved_bytes(pool);
    void* p = nullptr;
    cudaError_t e = cudaMallocAsync(&p, want, stream);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      empty_cache(dev);
      e = cudaMallocAsync(&p, want, stream);
    }
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      cudaGetLastError();
      const char* op = detail::current_op();
      throw OutOfMemory(std::string("[") + (op ? op : "empty") + "] out of memory on cuda:" +
                        std::to_string(dev) + ": requested " + std::to_string(nbytes) +
                        " bytes, " + std::to_string(free) + " bytes free of " +
                        std::to_string(total) + " (the allocator's cache was emptied first)");
    }
    check(e, "empty", "cudaMallocAsync");
    if (reserved_bytes(pool) == before) c.hits.fetch_add(1, std::memory_order_relaxed);
    s->data = p;
  }
  note_alloc(c, int64_t(s->nbytes));
  s->free_fn = free_block;
  s->free_ctx = reinterpret_cast<void*>(intptr_t(dev));
  return s;
}

AllocStats alloc_stats(int dev) {
  check_index(dev, "cuda::memory_stats");
  Counters& c = g_dev[dev];
  AllocStats r;
  r.allocated = c.allocated.load();
  r.peak_allocated = c.peak.load();
  r.allocs = c.allocs.load();
  r.frees = c.frees.load();
  r.cache_hits = c.hits.load();
  r.reserved = reserved_bytes(pool_of(dev)) + c.graph_bytes.load();
  return r;
}

void reset_peak(int dev) {
  check_index(dev, "cuda::reset_peak");
  g_dev[dev].peak.store(g_dev[dev].allocated.load());
}

void empty_cache(int dev) {
  check_index(dev, "cuda::empty_cache");
  detail::forbid_in_capture(Device::cuda(dev), "cuda::empty_cache", "emptying the cache (a sync)");
  set_device(dev);
  drain_cache(dev);
  // Frees are queued on streams: wait for them, so their blocks are back in the pool to trim.
  check(cudaDeviceSynchronize(), "cuda::empty_cache", "cudaDeviceSynchronize");
  check(cudaMemPoolTrimTo(pool_of(dev), 0), "cuda::empty_cache", "cudaMemPoolTrimTo");
}

}  // namespace ember::cuda

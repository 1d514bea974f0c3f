// Stream-ordered device memory: CUDA's memory pool (cudaMallocAsync / cudaFreeAsync) with a
// release threshold of "never", so freed blocks stay cached in the pool and the next allocation
// of a similar size costs no driver call. A block is freed on the stream of its last use
// (Storage::last_use), so it is reused only after the work that reads it.
//
// Out of memory: pending frees are waited for, the pool is trimmed to nothing, and the
// allocation retried once; a second failure throws OutOfMemory naming the op, the bytes
// requested and the bytes free, and leaves the device usable.
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>

#include "ember/backends/cuda/runtime.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {

struct Counters {
  std::atomic<int64_t> allocated{0}, peak{0}, allocs{0}, frees{0}, hits{0};
  std::once_flag once;
  cudaMemPool_t pool = nullptr;
};
Counters g_dev[64];

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
  Stream* last = s.last_use;
  if (!last || stream_device(*last) != dev) last = default_stream(dev);
  cudaSetDevice(dev);
  if (cudaFreeAsync(s.data, cudaStream_t(stream_handle(last, dev))) != cudaSuccess)
    cudaGetLastError();
}

}  // namespace

std::shared_ptr<Storage> allocate(size_t nbytes, int dev) {
  check_index(dev, "empty");
  set_device(dev);
  Counters& c = g_dev[dev];
  cudaMemPool_t pool = pool_of(dev);
  auto stream = cudaStream_t(stream_handle(nullptr, dev));
  auto s = std::make_shared<Storage>();
  s->nbytes = nbytes;
  s->place = Device::cuda(dev);
  if (nbytes) {
    const int64_t before = reserved_bytes(pool);
    void* p = nullptr;
    cudaError_t e = cudaMallocAsync(&p, nbytes, stream);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      empty_cache(dev);
      e = cudaMallocAsync(&p, nbytes, stream);
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
  note_alloc(c, int64_t(nbytes));
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
  r.reserved = reserved_bytes(pool_of(dev));
  return r;
}

void reset_peak(int dev) {
  check_index(dev, "cuda::reset_peak");
  g_dev[dev].peak.store(g_dev[dev].allocated.load());
}

void empty_cache(int dev) {
  check_index(dev, "cuda::empty_cache");
  set_device(dev);
  // Frees are queued on streams: wait for them, so their blocks are back in the pool to trim.
  check(cudaDeviceSynchronize(), "cuda::empty_cache", "cudaDeviceSynchronize");
  check(cudaMemPoolTrimTo(pool_of(dev), 0), "cuda::empty_cache", "cudaMemPoolTrimTo");
}

}  // namespace ember::cuda

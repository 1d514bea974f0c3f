#include "ember/kl/cache/kernel_cache.h"

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "ember/kl/cache/disk_cache.h"
#include "ember/kl/cache/file_ops.h"

namespace ember::kl {
namespace detail {
struct CacheEntry {
  std::atomic<int> done{0};
  KernelSet result;  // written once, before `done` is set
  std::string key, source;
  std::vector<std::string> symbols;
  bool corrupt_counted = false;
};
}  // namespace detail

using cache::DirMode;
using cache::DiskCache;
using cache::Lookup;

bool KernelHandle::ready() const {
  return entry_ && entry_->done.load(std::memory_order_acquire) != 0;
}

const KernelSet& KernelHandle::get() const {
  static const KernelSet empty{false, "[jit] an empty kernel handle", {}, nullptr};
  if (!entry_) return empty;
  entry_->done.wait(0, std::memory_order_acquire);
  return entry_->result;
}

std::string CacheStats::to_string() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "requests %lld, memory hits %lld, disk hits %lld, compiles %lld (%.3f s), "
                "failures %lld, corrupt %lld, evicted %lld",
                (long long)requests, (long long)memory_hits, (long long)disk_hits,
                (long long)compiles, compile_seconds, (long long)failures, (long long)corrupt,
                (long long)evicted);
  return buf;
}

namespace {
// How long a process waits for another one compiling the same key before compiling it itself:
// past any sane compile, short of forever (the other one may be stopped in a debugger).
constexpr double kLockWaitSeconds = 75;

// Warnings are one line; the compiler's full output goes to the EMBER_FUSION_DEBUG lines.
std::string first_line(const std::string& s) {
  size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl) + " (EMBER_FUSION_DEBUG=1 shows more)";
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

struct KernelCache::Impl {
  enum class State { kUnknown, kReady, kDead };
  using EntryPtr = std::shared_ptr<detail::CacheEntry>;

  std::shared_ptr<Toolchain> tc;
  KernelCacheOptions opt;
  std::string root;
  int64_t max_bytes = 0;
  bool debug = false;

  mutable std::mutex mu;
  std::condition_variable work_cv;
  mutable std::condition_variable idle_cv;
  std::unordered_map<std::string, EntryPtr> entries;
  std::deque<EntryPtr> queue;
  bool busy = false, stop = false;
  std::atomic<bool> cancel{false};
  CacheStats stats;
  std::thread worker;
  // Set once (identity, disk) and read under mu; the state may later go from ready to dead.
  State state = State::kUnknown;
  std::string dead_reason, fingerprint;
  std::unique_ptr<DiskCache> disk;
  std::string work_dir;  // the worker's only
  bool warned_dir = false, warned_toolchain = false, warned_compile = false;

  void say(const std::string& line) {
    if (opt.message)
      opt.message(line);
    else
      std::fputs((line + "\n").c_str(), stderr);
  }
  void warn_once(bool& flag, const std::string& text) {
    std::unique_lock lk(mu);
    if (std::exchange(flag, true)) return;
    lk.unlock();
    say("ember: warning: [jit] " + text);
  }
  void note(const std::string& text) {
    if (debug) say("ember: [jit] " + text);
  }

  void finish(const EntryPtr& e, KernelSet ks) {
    e->result = std::move(ks);
    e->source.clear();
    e->source.shrink_to_fit();
    e->done.store(1, std::memory_order_release);
    e->done.notify_all();
  }
  // Call with mu held.
  void fail_locked(const EntryPtr& e, const std::string& why) {
    ++stats.failures;
    finish(e, KernelSet{false, why, {}, nullptr});
  }
  void fail(const EntryPtr& e, const std::string& why) {
    std::lock_guard lk(mu);
    fail_locked(e, why);
  }

  bool resolve(std::shared_ptr<Module> m, const EntryPtr& e, KernelSet* ks, std::string* err) {
    ks->fns.clear();
    for (const auto& s : e->symbols) {
      void* p = m->symbol(s);
      if (!p) {
        *err = "the compiled object has no entry point '" + s + "'";
        return false;
      }
      ks->fns.push_back(reinterpret_cast<KernelFn>(p));
    }
    ks->ok = true;
    ks->module = std::move(m);
    return true;
  }

  // Loads the entry from disk when a whole, matching one is there.
  Lookup try_disk(DiskCache& d, const EntryPtr& e, const std::string& fp, KernelSet* ks) {
    const std::string id = DiskCache::entry_id(e->key, fp);
    Lookup r = d.lookup(id, e->key, fp);
    if (r != Lookup::kFound) return r;
    std::string err;
    std::shared_ptr<Module> m = tc->load_file(d.image_path(id), &err);
    if (!m || !resolve(std::move(m), e, ks, &err)) return Lookup::kCorrupt;
    return Lookup::kFound;
  }

  void open_disk(const ToolchainIdentity& id) {
    auto d = std::make_unique<DiskCache>(root, tc->target() + "-" + id.name, max_bytes,
                                         opt.assume_noexec);
    if (d->mode() != DirMode::kReadWrite)
      warn_once(warned_dir, "kernel cache: " + d->reason() +
                                "; newly compiled kernels are kept in memory only "
                                "(EMBER_CACHE_DIR chooses another directory)");
    std::lock_guard lk(mu);
    fingerprint = id.fingerprint;
    disk = std::move(d);
    state = State::kReady;
  }

  void kill_toolchain(const std::string& why) {
    warn_once(warned_toolchain, first_line(why) +
                                    "; fused kernels run on the eager path instead "
                                    "(EMBER_CXX names the C++ compiler to use)");
    std::lock_guard lk(mu);
    state = State::kDead;
    dead_reason = "[jit] " + why;
  }

  void resolve_identity() {
    ToolchainIdentity id = tc->identify(&cancel);
    if (!id.ok) return kill_toolchain(id.error);
    cache::write_identity(root, tc->quick_id(), id);
    open_disk(id);
  }

  bool ensure_work_dir(DiskCache& d) {
    struct stat st;
    if (!work_dir.empty() && ::stat(work_dir.c_str(), &st) == 0) return true;
    if (d.mode() == DirMode::kReadWrite) work_dir = cache::make_private_dir(d.dir(), ".work-");
    if (work_dir.empty() || ::stat(work_dir.c_str(), &st) != 0) {
      const char* t = std::getenv("TMPDIR");
      for (std::string parent :
           {std::string(t && *t ? t : "/tmp"), std::string("/tmp"), std::string("/dev/shm")})
        if (!(work_dir = cache::make_private_dir(parent, "ember-jit-")).empty()) break;
    }
    return !work_dir.empty();
  }

  // Loads a fresh image: from its published file (which proves the directory can hold code),
  // else from memory.
  std::shared_ptr<Module> load_new(DiskCache& d, const std::string& id, const EntryPtr& e,
                                   const std::string& image, std::string* err) {
    if (d.mode() == DirMode::kReadWrite) {
      if (!d.publish(id, e->key, fingerprint, image, err)) {
        d.degrade(DirMode::kMemory, *err);
        warn_once(warned_dir, "kernel cache: " + *err + "; compiled kernels are kept in memory");
      } else if (auto m = tc->load_file(d.image_path(id), err)) {
        return m;
      } else {
        d.remove(id);
        std::string why = d.dir() + " cannot hold loadable code (" + *err + ")";
        if (auto mem = tc->load_image(image, err)) {
          d.degrade(DirMode::kMemory, why);
          warn_once(warned_dir, "kernel cache: " + why + "; compiled kernels are kept in memory");
          return mem;
        }
        return nullptr;
      }
    }
    return tc->load_image(image, err);
  }

  void process(const EntryPtr& e) {
    if (state == State::kUnknown) resolve_identity();
    DiskCache* d;
    {
      std::lock_guard lk(mu);
      if (state == State::kDead) return fail_locked(e, dead_reason);
      d = disk.get();
    }
    const std::string id = DiskCache::entry_id(e->key, fingerprint);
    std::optional<DiskCache::KeyLock> lock;
    if (d->mode() == DirMode::kReadWrite) lock.emplace(*d, id, kLockWaitSeconds, &cancel);
    KernelSet ks;
    Lookup found =
        d->mode() == DirMode::kMemory ? Lookup::kMissing : try_disk(*d, e, fingerprint, &ks);
    if (found == Lookup::kFound) {
      {
        std::lock_guard lk(mu);
        ++stats.disk_hits;
      }
      note("loaded " + e->key + " from " + d->dir());
      return finish(e, std::move(ks));
    }
    if (found == Lookup::kCorrupt) {
      std::lock_guard lk(mu);
      if (!std::exchange(e->corrupt_counted, true)) ++stats.corrupt;
    }
    if (!ensure_work_dir(*d)) {
      kill_toolchain("no writable directory to compile in");
      return fail(e, dead_reason);
    }

    const auto t0 = std::chrono::steady_clock::now();
    CompileResult cr = tc->compile(e->source, CompileJob{work_dir, &cancel});
    const double dt = seconds_since(t0);
    {
      std::lock_guard lk(mu);
      ++stats.compiles;
      stats.compile_seconds += dt;
    }
    if (!cr.ok) {
      if (cancel.load()) return fail(e, "[jit] the kernel cache was shut down");
      if (cr.toolchain_broken) {
        kill_toolchain(cr.log);
      } else {
        warn_once(warned_compile,
                  "a kernel failed to compile and runs on the eager path "
                  "instead (later failures are counted, not printed): " +
                      first_line(cr.log));
      }
      note("compile of " + e->key + " failed:\n" + cr.log);
      return fail(e, "[jit] " + cr.log);
    }
    std::string err;
    std::shared_ptr<Module> m = load_new(*d, id, e, cr.image, &err);
    if (!m) {
      kill_toolchain("the compiler's output cannot be loaded: " + err);
      return fail(e, "[jit] the compiled object cannot be loaded: " + err);
    }
    if (!resolve(std::move(m), e, &ks, &err)) {
      d->remove(id);
      warn_once(warned_compile, "a kernel set is unusable and runs on the eager path: " + err);
      return fail(e, "[jit] " + err);
    }
    note("compiled " + e->key + " (" + std::to_string(e->symbols.size()) + " kernels) in " +
         std::to_string(int(dt * 1000)) + " ms");
    finish(e, std::move(ks));
    lock.reset();
    int64_t evicted = d->evict_if_needed(int64_t(cr.image.size()) + 200);
    std::lock_guard lk(mu);
    stats.evicted += evicted;
  }

  void run_worker() {
    for (;;) {
      EntryPtr e;
      {
        std::unique_lock lk(mu);
        work_cv.wait(lk, [&] { return stop || !queue.empty(); });
        if (stop) return;
        e = std::move(queue.front());
        queue.pop_front();
        busy = true;
      }
      process(e);
      std::lock_guard lk(mu);
      busy = false;
      if (queue.empty()) idle_cv.notify_all();
    }
  }
};

KernelCache::KernelCache(std::shared_ptr<Toolchain> toolchain, KernelCacheOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.tc = std::move(toolchain);
  m.opt = std::move(options);
  m.root = m.opt.root.empty() ? cache::default_root() : m.opt.root;
  m.max_bytes = m.opt.max_bytes > 0 ? m.opt.max_bytes : cache::default_max_bytes();
  if (m.opt.debug >= 0) {
    m.debug = m.opt.debug > 0;
  } else {
    const char* e = std::getenv("EMBER_FUSION_DEBUG");
    m.debug = e && *e && std::string(e) != "0";
  }
  // A second process finds the toolchain's identity on disk and needs no compiler run to serve
  // hits; otherwise the worker finds it out before its first job.
  ToolchainIdentity id = cache::read_identity(m.root, m.tc->quick_id());
  if (id.ok) m.open_disk(id);
}

KernelCache::~KernelCache() {
  Impl& m = *impl_;
  std::deque<Impl::EntryPtr> left;
  {
    std::lock_guard lk(m.mu);
    m.stop = true;
    left.swap(m.queue);
  }
  m.cancel = true;
  m.work_cv.notify_all();
  if (m.worker.joinable()) m.worker.join();
  for (auto& e : left) m.fail(e, "[jit] the kernel cache was shut down");
  if (!m.work_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(m.work_dir, ec);
  }
  m.note(m.stats.to_string());
}

KernelHandle KernelCache::request(const std::string& key, std::string source,
                                  std::vector<std::string> symbols) {
  Impl& m = *impl_;
  std::unique_lock lk(m.mu);
  ++m.stats.requests;
  if (auto it = m.entries.find(key); it != m.entries.end()) {
    ++m.stats.memory_hits;
    return KernelHandle(it->second);
  }
  auto e = std::make_shared<detail::CacheEntry>();
  e->key = key;
  e->symbols = std::move(symbols);
  m.entries.emplace(key, e);
  if (m.state == Impl::State::kDead) {
    m.fail_locked(e, m.dead_reason);
    return KernelHandle(e);
  }
  if (m.state == Impl::State::kReady && m.disk->mode() != DirMode::kMemory) {
    DiskCache* d = m.disk.get();
    lk.unlock();  // file reads and dlopen run outside the lock
    KernelSet ks;
    Lookup found = m.try_disk(*d, e, m.fingerprint, &ks);
    lk.lock();
    if (found == Lookup::kFound) {
      ++m.stats.disk_hits;
      m.finish(e, std::move(ks));
      lk.unlock();
      m.note("loaded " + key + " from " + d->dir());
      return KernelHandle(e);
    }
    if (found == Lookup::kCorrupt) {
      ++m.stats.corrupt;
      e->corrupt_counted = true;
    }
  }
  e->source = std::move(source);
  m.queue.push_back(e);
  if (!m.worker.joinable()) m.worker = std::thread([&m] { m.run_worker(); });
  m.work_cv.notify_one();
  return KernelHandle(e);
}

KernelHandle KernelCache::find(const std::string& key) const {
  std::lock_guard lk(impl_->mu);
  auto it = impl_->entries.find(key);
  if (it == impl_->entries.end()) return {};
  ++impl_->stats.memory_hits;
  return KernelHandle(it->second);
}

void KernelCache::wait_idle() const {
  std::unique_lock lk(impl_->mu);
  impl_->idle_cv.wait(lk, [&] { return impl_->queue.empty() && !impl_->busy; });
}

CacheStats KernelCache::stats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->stats;
}

std::string KernelCache::directory() const {
  std::lock_guard lk(impl_->mu);
  return impl_->disk && impl_->disk->mode() != DirMode::kMemory ? impl_->disk->dir() : "";
}

bool KernelCache::persistent() const {
  std::lock_guard lk(impl_->mu);
  return impl_->disk && impl_->disk->mode() == DirMode::kReadWrite;
}

}  // namespace ember::kl

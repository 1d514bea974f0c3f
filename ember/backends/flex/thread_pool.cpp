#include "ember/backends/flex/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace ember::flex {
namespace {

thread_local bool t_in_worker = false;

// Waiting spins a while before it blocks: a training step's ops arrive back to back, and a
// blocked thread takes a futex wake (tens of microseconds on a busy machine) to join the next
// job, which is more than a small product takes. Idle workers spin for kIdleSpin after a job;
// the caller spins for kDoneSpin for the workers to finish theirs. Both then block, so an idle
// pool costs no CPU.
constexpr auto kIdleSpin = std::chrono::microseconds(10);
constexpr auto kDoneSpin = std::chrono::microseconds(20);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until ready() or `limit` has passed; returns ready().
template <class F>
bool spin_until(const F& ready, std::chrono::steady_clock::duration limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= end) return ready();
  }
}

class Pool {
 public:
  explicit Pool(int n) { start(n); }
  ~Pool() { stop(); }

  int size() const { return int(workers_.size()) + 1; }

  void resize(int n) {
    std::lock_guard submit(submit_mu_);
    stop();
    start(n);
  }

  // Runs fn over [0, n) split into chunks; returns false when the pool is busy (caller runs inline).
  // An exception thrown by fn (on any thread) is rethrown here once every chunk has finished.
  bool run(int64_t n, int64_t grain, detail::RangeFn fn, const void* ctx) {
    std::unique_lock submit(submit_mu_, std::try_to_lock);
    if (!submit.owns_lock() || workers_.empty()) return false;
    int64_t parts = std::min<int64_t>(size(), (n + grain - 1) / grain);
    // A few chunks per thread balance uneven work without much overhead.
    int64_t chunks = std::min<int64_t>(parts * 4, (n + grain - 1) / grain);
    {
      std::lock_guard lock(mu_);
      fn_ = fn;
      ctx_ = ctx;
      n_ = n;
      chunks_ = chunks;
      next_.store(0);
      pending_.store(chunks);
      error_ = nullptr;
      open_ = true;
      generation_.fetch_add(1);
    }
    cv_.notify_all();
    t_in_worker = true;  // nested parallel_for from inside fn runs inline
    work();
    t_in_worker = false;
    // Wait for every chunk and for every worker that joined this job to leave it, then close the
    // job in the same critical section: a worker waking late finds it closed and stays out, so
    // no straggler can read the next job's fields or take its chunks.
    auto finished = [&] { return pending_.load() == 0 && active_.load() == 0; };
    spin_until(finished, kDoneSpin);
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, finished);
    open_ = false;
    if (error_) {
      std::exception_ptr e = std::exchange(error_, nullptr);
      lock.unlock();
      std::rethrow_exception(e);
    }
    return true;
  }

 private:
  void start(int n) {
    quit_ = false;
    for (int i = 1; i < n; ++i)
      workers_.emplace_back([this] {
        t_in_worker = true;
        uint64_t seen = 0;
        for (;;) {
          spin_until([&] { return generation_.load() != seen; }, kIdleSpin);
          {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [&] { return quit_ || generation_.load() != seen; });
            if (quit_) return;
            seen = generation_.load();
            if (!open_) continue;  // woke after the job was done and closed
            active_.fetch_add(1);
          }
          work();
          std::lock_guard lock(mu_);
          if (active_.fetch_sub(1) == 1) done_cv_.notify_all();
        }
      });
  }
  void stop() {
    {
      std::lock_guard lock(mu_);
      quit_ = true;
      generation_.fetch_add(1);  // ends the workers' spinning
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }
  void work() {
    for (;;) {
      int64_t c = next_.fetch_add(1);
      if (c >= chunks_) return;
      int64_t b = n_ * c / chunks_, e = n_ * (c + 1) / chunks_;
      if (b < e) {
        try {
          fn_(ctx_, b, e);
        } catch (...) {
          std::lock_guard lock(mu_);
          if (!error_) error_ = std::current_exception();
        }
      }
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard lock(mu_);
        done_cv_.notify_all();
      }
    }
  }

  std::mutex submit_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  bool quit_ = false;
  bool open_ = false;  // a job is running and workers may join it (guarded by mu_)
  // Workers inside work() for the current job (changed under mu_, read by the spinning caller).
  std::atomic<int> active_{0};
  std::exception_ptr error_;  // the first exception fn threw in the current job (guarded by mu_)
  std::atomic<uint64_t> generation_{0};  // bumped under mu_ for each job (and to quit)
  detail::RangeFn fn_ = nullptr;
  const void* ctx_ = nullptr;
  int64_t n_ = 0, chunks_ = 0;
  std::atomic<int64_t> next_{0}, pending_{0};
};

int default_threads() {
  if (const char* e = std::getenv("EMBER_NUM_THREADS")) {
    int n = std::atoi(e);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

Pool& pool() {
  static Pool p(default_threads());
  return p;
}

}  // namespace

int num_threads() { return pool().size(); }
bool in_parallel_region() { return t_in_worker; }
void set_num_threads(int n) { pool().resize(std::max(1, n)); }

namespace detail {
void parallel_for_impl(int64_t n, int64_t grain, RangeFn fn, const void* ctx) {
  grain = std::max<int64_t>(grain, 1);
  if (n <= grain || t_in_worker || !pool().run(n, grain, fn, ctx)) fn(ctx, 0, n);
}
}  // namespace detail

}  // namespace ember::flex

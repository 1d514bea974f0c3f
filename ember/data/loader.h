#pragma once
// DataLoader: batches of a dataset, optionally shuffled per epoch and made by worker threads.
// The batch order depends only on the seed and the epoch, never on the number of workers.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "ember/data/example.h"
#include "ember/data/transforms.h"
#include "ember/ops/creation.h"
#include "ember/tensor.h"

namespace ember::data {

struct LoaderOptions {
  int64_t batch_size = 1;
  /// Reshuffle every epoch, with an order fixed by (seed, epoch).
  bool shuffle = false;
  uint64_t seed = 0;
  /// When set, each epoch's order is drawn from this stream instead of (seed, epoch): one draw
  /// an epoch, so a generator seeded alike gives the same orders (torch's generator=).
  std::optional<Generator> generator = {};
  /// Drop a last batch smaller than batch_size.
  bool drop_last = false;
  /// Threads that make batches; 0 makes them on the caller's thread when asked for.
  int workers = 0;
  /// Batches each worker may make ahead of the consumer.
  int prefetch = 2;
};

/// Default batcher: stacks tensors, or (input, target) pairs, along a new first dim.
struct StackBatcher {
  std::pair<Tensor, Tensor> operator()(const std::vector<std::pair<Tensor, Tensor>>& items) const;
  Tensor operator()(const std::vector<Tensor>& items) const;
};

/// A batcher that hands the items over as they are.
struct VectorBatcher {
  template <class T>
  std::vector<T> operator()(std::vector<T> items) const { return items; }
};

namespace detail {
void check_loader_options(const LoaderOptions& o);
/// Batches of `batch_size` from `n` items (ceil, or floor with drop_last), without overflow;
/// throws ValueError for a dataset with a negative size.
int64_t batch_count(int64_t n, int64_t batch_size, bool drop_last);
/// The dataset indices of one epoch, in order.
std::vector<int64_t> epoch_order(int64_t n, const LoaderOptions& o, uint64_t epoch);
/// Throws IndexError unless 0 <= start <= batches.
void check_start_batch(int64_t start, int64_t batches);

/// One pass over the data. Workers take batch numbers in order, at most `window` ahead of the
/// consumer; results (or exceptions) wait in `ready_` until the consumer reaches them.
template <class T, class Batcher, class Batch>
class LoaderRun {
 public:
  LoaderRun(DatasetPtr<T> ds, const Batcher& b, const LoaderOptions& o, uint64_t epoch,
            int64_t start)
      : ds_(std::move(ds)), batcher_(b), bs_(o.batch_size),
        order_(epoch_order(ds_->size(), o, epoch)) {
    batches_ = batch_count(int64_t(order_.size()), bs_, o.drop_last);
    check_start_batch(start, batches_);
    consumed_ = start;
    taken_ = start;
    window_ = int64_t(o.workers) * std::max(o.prefetch, 1);
    try {
      for (int w = 0; w < o.workers; ++w) threads_.emplace_back([this] { work(); });
    } catch (...) {  // no destructor runs for a half-made run: join what started
      stop_and_join();
      throw;
    }
  }
  ~LoaderRun() { stop_and_join(); }
  LoaderRun(const LoaderRun&) = delete;
  LoaderRun& operator=(const LoaderRun&) = delete;

  bool has_next() const { return consumed_ < batches_; }
  /// The next batch in order; rethrows the exception its maker threw.
  Batch next() {
    int64_t k = consumed_++;
    if (threads_.empty()) return make(k);
    std::unique_lock lock(mu_);
    ready_cv_.wait(lock, [&] { return ready_.count(k) > 0; });
    Slot s = std::move(ready_.at(k));
    ready_.erase(k);
    lock.unlock();
    work_cv_.notify_all();  // the window moved on
    if (s.error) std::rethrow_exception(s.error);
    return std::move(*s.batch);
  }

 private:
  struct Slot {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  void stop_and_join() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Batch make(int64_t k) const {
    std::vector<T> items;
    // k < batches_, so k * bs_ < size; the end is clamped without forming begin + bs_.
    int64_t n = int64_t(order_.size()), begin = k * bs_, end = begin + std::min(bs_, n - begin);
    items.reserve(size_t(end - begin));
    for (int64_t i = begin; i < end; ++i) items.push_back(ds_->get(order_[size_t(i)]));
    return batcher_(std::move(items));
  }
  void work() {
    for (;;) {
      int64_t k;
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [&] {
          return stop_ || taken_ >= batches_ || taken_ < consumed_ + window_;
        });
        if (stop_ || taken_ >= batches_) return;
        k = taken_++;
      }
      Slot s;
      try {
        s.batch.emplace(make(k));
      } catch (...) {
        s.error = std::current_exception();
      }
      {
        std::lock_guard lock(mu_);
        ready_.emplace(k, std::move(s));
      }
      ready_cv_.notify_all();
    }
  }

  DatasetPtr<T> ds_;
  const Batcher& batcher_;  // owned by the DataLoader, which outlives its runs' use
  int64_t bs_;
  std::vector<int64_t> order_;
  int64_t batches_ = 0, window_ = 0;
  std::atomic<int64_t> consumed_{0};  // written by the consumer only; read by workers
  int64_t taken_ = 0;                 // guarded by mu_
  bool stop_ = false;                 // guarded by mu_
  std::map<int64_t, Slot> ready_;     // guarded by mu_
  std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  std::vector<std::thread> threads_;
};
}  // namespace detail

/// Batches of `dataset` made by `Batcher` (called as batcher(std::vector<T>) from worker
/// threads, so it must be safe to call concurrently). Iterate with range-for; each range-for over
/// the loader itself is the next epoch (0, 1, ...), or pick one with epoch(e).
template <class T, class Batcher = StackBatcher>
class DataLoader {
 public:
  using Batch = std::decay_t<std::invoke_result_t<const Batcher&, std::vector<T>>>;
  using Run = detail::LoaderRun<T, Batcher, Batch>;

  class Iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    explicit Iterator(std::shared_ptr<Run> run) : run_(std::move(run)) { ++*this; }
    Batch& operator*() { return *cur_; }
    Batch* operator->() { return &*cur_; }
    Iterator& operator++() {
      cur_.reset();
      if (run_->has_next()) cur_.emplace(run_->next());
      return *this;
    }
    bool operator==(std::default_sentinel_t) const { return !cur_; }

   private:
    std::shared_ptr<Run> run_;  // the last iterator stops and joins the workers
    std::optional<Batch> cur_;
  };

  /// One epoch as a range (from batch `start` on).
  class Epoch {
   public:
    Epoch(const DataLoader* l, uint64_t e, int64_t start) : loader_(l), epoch_(e), start_(start) {}
    Iterator begin() const {
      return Iterator(std::make_shared<Run>(loader_->ds_, loader_->batcher_, loader_->opt_,
                                            epoch_, start_));
    }
    std::default_sentinel_t end() const { return {}; }

   private:
    const DataLoader* loader_;
    uint64_t epoch_;
    int64_t start_;
  };

  DataLoader(DatasetPtr<T> dataset, LoaderOptions o = {}, Batcher b = {})
      : ds_(std::move(dataset)), opt_(o), batcher_(std::move(b)) {
    detail::check_loader_options(opt_);
  }
  // Runs hold a reference to the batcher: the loader stays put.
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// Batches per epoch.
  int64_t size() const {
    return detail::batch_count(ds_->size(), opt_.batch_size, opt_.drop_last);
  }
  const LoaderOptions& options() const { return opt_; }
  /// Epoch `e`'s batches, skipping its first `start` batches without making them (a resumed
  /// epoch continues with exactly the batches an uninterrupted one would have seen).
  Epoch epoch(uint64_t e, int64_t start = 0) const { return Epoch(this, e, start); }
  /// The epoch the next range-for over the loader runs.
  void set_epoch(uint64_t e) { next_epoch_ = e; }
  Iterator begin() { return epoch(next_epoch_++).begin(); }
  std::default_sentinel_t end() const { return {}; }

 private:
  DatasetPtr<T> ds_;
  LoaderOptions opt_;
  Batcher batcher_;
  uint64_t next_epoch_ = 0;
};

}  // namespace ember::data

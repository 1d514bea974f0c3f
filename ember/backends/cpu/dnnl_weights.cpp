// The cache of weights reordered into oneDNN's blocked layouts. A convolution's weights are
// reordered on every call otherwise (44 MB a ResNet-18 inference at batch 1, a fifth of its
// time). Only frozen storages (Storage::frozen: a loaded model's weights) are kept, because
// they change only through writes that bump the version counter, which the entry records: a
// write makes the next call miss and reorder again. An entry holds its storage weakly: once the
// weights are freed the entry can never hit (a new storage at the same address has a live
// weak_ptr of its own, not the expired one), and it is dropped at the next insertion.
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember/backends/cpu/dnnl_runtime.h"
#include "ember/tensor_impl.h"

namespace ember::cpu::onednn {
namespace {

struct Packed {
  std::weak_ptr<Storage> storage;
  uint64_t version = 0;
  int64_t offset = 0;  // bytes from the storage's start to the first weight
  dnnl_memory_desc_t from, to;
  std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};  // in layout `to`
  size_t size = 0;
  uint64_t used = 0;  // the cache's clock at the last hit
  size_t bytes() const { return size; }
};

int64_t default_budget() {
  if (const char* e = std::getenv("EMBER_DNNL_WEIGHT_CACHE_MB")) {
    const long long mb = std::atoll(e);
    if (mb >= 0) return int64_t(mb) << 20;
  }
  return int64_t(512) << 20;
}

class WeightCache {
 public:
  std::shared_ptr<const void> find(const Storage* id, uint64_t version, int64_t offset,
                                   const dnnl_memory_desc_t& from, const dnnl_memory_desc_t& to) {
    std::lock_guard lock(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return nullptr;
    for (const auto& p : it->second)
      if (matches(*p, id, offset, from, to) && p->version == version) {
        p->used = ++clock_;
        ++hits_;
        return {p, p->data.get()};
      }
    return nullptr;
  }
  std::shared_ptr<const void> insert(std::shared_ptr<Packed> p, const Storage* id) {
    std::lock_guard lock(mu_);
    ++misses_;
    if (int64_t(p->bytes()) > budget_) return {p, p->data.get()};  // too big: used once
    auto& bucket = index_[id];
    // The same weights at an older version (or a stale storage) are replaced.
    std::erase_if(bucket, [&](const std::shared_ptr<Packed>& q) {
      const bool gone = q->storage.expired() || matches(*q, id, p->offset, p->from, p->to);
      if (gone) bytes_ -= int64_t(q->bytes());
      return gone;
    });
    p->used = ++clock_;
    bytes_ += int64_t(p->bytes());
    bucket.push_back(p);
    trim();
    return {p, p->data.get()};
  }
  WeightCacheStats stats() {
    std::lock_guard lock(mu_);
    int64_t n = 0;
    for (const auto& [id, bucket] : index_) n += int64_t(bucket.size());
    return {hits_, misses_, n, bytes_, budget_};
  }
  bool enabled() {
    std::lock_guard lock(mu_);
    return budget_ > 0;
  }
  void set_budget(int64_t bytes) {
    std::lock_guard lock(mu_);
    budget_ = std::max<int64_t>(0, bytes);
    trim();
  }

 private:
  static bool matches(const Packed& p, const Storage* id, int64_t offset,
                      const dnnl_memory_desc_t& from, const dnnl_memory_desc_t& to) {
    // lock() rather than a stored address: an expired entry never matches a new storage.
    return p.offset == offset && p.storage.lock().get() == id &&
           dnnl_memory_desc_equal(&p.from, &from) && dnnl_memory_desc_equal(&p.to, &to);
  }
  // Drops entries of freed storages, then the least recently used, until within the budget.
  void trim() {
    for (auto it = index_.begin(); it != index_.end();) {
      std::erase_if(it->second, [&](const std::shared_ptr<Packed>& q) {
        if (!q->storage.expired()) return false;
        bytes_ -= int64_t(q->bytes());
        return true;
      });
      it = it->second.empty() ? index_.erase(it) : std::next(it);
    }
    while (bytes_ > budget_) {
      auto oldest = index_.end();
      size_t at = 0;
      for (auto it = index_.begin(); it != index_.end(); ++it)
        for (size_t k = 0; k < it->second.size(); ++k)
          if (oldest == index_.end() || it->second[k]->used < oldest->second[at]->used)
            oldest = it, at = k;
      if (oldest == index_.end()) break;
      bytes_ -= int64_t(oldest->second[at]->bytes());
      oldest->second.erase(oldest->second.begin() + std::ptrdiff_t(at));
      if (oldest->second.empty()) index_.erase(oldest);
    }
  }
  std::mutex mu_;
  std::unordered_map<const Storage*, std::vector<std::shared_ptr<Packed>>> index_;
  uint64_t clock_ = 0;
  int64_t bytes_ = 0, budget_ = default_budget();
  int64_t hits_ = 0, misses_ = 0;
};

WeightCache& weight_cache() {
  static WeightCache* c = new WeightCache;  // never destroyed: convs may run during exit
  return *c;
}

}  // namespace

std::shared_ptr<const void> packed_weights(const Tensor& w, const void* data,
                                           const dnnl_memory_desc_t& from,
                                           const dnnl_memory_desc_t& to, const Primitive& reorder) {
  const std::shared_ptr<Storage>& s = w.impl()->storage;
  WeightCache& c = weight_cache();
  // A storage a queue will write (a queued copy_ into it, whose version was bumped when it was
  // recorded) is reordered per call until that queue has run: a call running before the write
  // would otherwise keep the old weights under the new version.
  if (!s || !s->frozen || !c.enabled() || s->pending.load(std::memory_order_acquire))
    return nullptr;
  const int64_t offset = static_cast<const char*>(data) - static_cast<const char*>(s->data);
  const uint64_t version = s->version.load();
  if (auto hit = c.find(s.get(), version, offset, from, to)) return hit;
  auto p = std::make_shared<Packed>();
  p->storage = s;
  p->version = version;
  p->offset = offset;
  p->from = from;
  p->to = to;
  p->size = (dnnl_memory_desc_get_size(&to) + 63) / 64 * 64;
  p->data.reset(std::aligned_alloc(64, p->size));
  if (!p->data) return nullptr;
  execute(reorder, {{DNNL_ARG_FROM, &from, data}, {DNNL_ARG_TO, &to, p->data.get()}});
  return c.insert(std::move(p), s.get());
}

}  // namespace ember::cpu::onednn

namespace ember::cpu {
WeightCacheStats dnnl_weight_cache_stats() { return onednn::weight_cache().stats(); }
void set_dnnl_weight_cache_bytes(int64_t bytes) { onednn::weight_cache().set_budget(bytes); }
}  // namespace ember::cpu

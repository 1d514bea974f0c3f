#include "ember/fusion/queue.h"

#include <array>
#include <exception>

#include "ember/detail/file.h"
#include "ember/error.h"
#include "ember/fusion/library.h"
#include "ember/fusion/plan.h"
#include "ember/fusion/stats.h"
#include "ember/store/mapped.h"

namespace ember::fusion {
namespace {

thread_local const char* t_origin = nullptr;

// `err` raised by a node of this flush that came from a composite op's lowering, renamed after
// that op: "[nll_loss] target 7 ..." from cross_entropy becomes "[cross_entropy] target 7 ...".
std::exception_ptr named_for_caller(std::exception_ptr err, const std::vector<Node>& nodes,
                                    size_t done) {
  try {
    std::rethrow_exception(err);
  } catch (const Error& e) {
    const std::string what = e.what();
    const bool index = dynamic_cast<const IndexError*>(&e) != nullptr;
    if (!index && dynamic_cast<const ValueError*>(&e) == nullptr) return err;
    for (size_t i = done; i < nodes.size(); ++i) {
      const std::string tag = std::string("[") + op_name(nodes[i].op) + "] ";
      if (!nodes[i].origin || what.rfind(tag, 0) != 0) continue;
      try {
        if (index) detail::throw_index(nodes[i].origin, what.substr(tag.size()));
        detail::throw_value(nodes[i].origin, what.substr(tag.size()));
      } catch (...) {
        return std::current_exception();
      }
    }
  } catch (...) {
  }
  return err;
}

// A storage whose writer failed: every read rethrows the error that stopped the queue.
class Poison final : public PendingWrite {
 public:
  explicit Poison(std::exception_ptr e) : error_(std::move(e)) {}
  void materialize(Storage&) override { std::rethrow_exception(error_); }
  void on_ready(Storage&, std::function<void()>) override {}

 private:
  std::exception_ptr error_;
};

// A poison that storages may point at for long: never freed.
Poison* kept_poison(std::exception_ptr error) {
  auto p = std::make_shared<Poison>(std::move(error));
  static std::mutex keep_mu;
  static std::vector<std::shared_ptr<Poison>> keep;
  std::lock_guard l(keep_mu);
  keep.push_back(p);
  return p.get();
}

constexpr size_t kMaxNodes = 4096;  // a queue this long runs (memory for inputs it holds)

const Storage* const kErased = reinterpret_cast<const Storage*>(uintptr_t(1));

}  // namespace

size_t StorageIndex::slot_of(const Storage* s) const {
  uint64_t h = uint64_t(reinterpret_cast<uintptr_t>(s)) * 0x9E3779B97F4A7C15ull;
  return size_t(h >> 32) & (slots_.size() - 1);
}

int32_t StorageIndex::find(const Storage* s) const {
  if (slots_.empty()) return -1;
  for (size_t i = slot_of(s);; i = (i + 1) & (slots_.size() - 1)) {
    const Slot& e = slots_[i];
    if (e.key == s) return e.id;
    if (!e.key) return -1;
  }
}

void StorageIndex::set(const Storage* s, int32_t id) {
  if ((filled_ + 1) * 2 > slots_.size()) grow();
  size_t i = slot_of(s);
  size_t free_at = SIZE_MAX;
  for (;; i = (i + 1) & (slots_.size() - 1)) {
    Slot& e = slots_[i];
    if (e.key == s) {
      e.id = id;
      return;
    }
    if (e.key == kErased && free_at == SIZE_MAX) free_at = i;
    if (!e.key) break;
  }
  if (free_at == SIZE_MAX) {
    free_at = i;
    ++filled_;
    used_.push_back(uint32_t(i));
  }
  slots_[free_at] = {s, id};
  ++live_;
}

void StorageIndex::erase(const Storage* s) {
  if (slots_.empty()) return;
  for (size_t i = slot_of(s);; i = (i + 1) & (slots_.size() - 1)) {
    Slot& e = slots_[i];
    if (e.key == s) {
      e = {kErased, -1};
      --live_;
      return;
    }
    if (!e.key) return;
  }
}

void StorageIndex::clear() {
  for (uint32_t i : used_) slots_[i] = {};
  used_.clear();
  live_ = filled_ = 0;
}

void StorageIndex::grow() {
  // Sized for the live entries: erased slots go, and a table of mostly erased ones need not grow.
  size_t n = 64;
  while (n < (live_ + 1) * 4) n *= 2;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(n, Slot{});
  used_.clear();
  live_ = filled_ = 0;
  for (const Slot& e : old)
    if (e.key && e.key != kErased) set(e.key, e.id);
}

int32_t Queue::input_value(const Tensor& t) const {
  if (!t.defined() || t.impl()->is_constant) return -1;
  const Storage* s = t.impl()->storage.get();
  if (s->pending.load(std::memory_order_relaxed) != this) return -1;
  const int32_t id = by_storage_.find(s);
  if (id < 0) return -1;
  const Value& v = values_[size_t(id)];
  const TensorMeta& m = nodes_[size_t(v.node)].meta.m[v.out];
  // Only the tensor as its producer made it is the value; a view of it reads memory.
  if (t.offset() != 0 || !t.is_contiguous() || t.shape() != m.shape || t.dtype() != m.dtype)
    return -1;
  return id;
}

TensorList Queue::record(const OpCall& c) {
  std::lock_guard lock(mu_);
  // Built in place: a node is most of a kilobyte (attrs, metas), too much to build and move.
  const size_t values_before = values_.size();
  nodes_.emplace_back();
  TensorList outs;
  try {
    outs = fill_node(c, nodes_.back());
  } catch (...) {  // out of memory: the queue stays as it was
    for (size_t v = values_before; v < values_.size(); ++v) by_storage_.erase(values_[v].raw);
    values_.resize(values_before);
    nodes_.pop_back();
    throw;
  }
  stats_recorded(1);
  if (nodes_.size() >= kMaxNodes) flush_locked();
  return outs;
}

TensorList Queue::fill_node(const OpCall& c, Node& n) {
  const int32_t node_id = int32_t(nodes_.size() - 1);
  n.op = c.op;
  n.attrs = c.attrs;
  n.meta = c.meta;
  n.device = c.device;
  const bool inplace = c.op == OpId::copy && c.inputs.size() == 2;
  n.inputs.reserve(c.inputs.size());
  n.outputs.reserve(size_t(n.meta.n));
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    NodeInput in;
    in.defined = c.inputs[i].defined();
    if (in.defined) in.dtype = c.inputs[i].dtype();
    const int32_t v = inplace && i == 0 ? -1 : input_value(c.inputs[i]);
    if (v >= 0) in.value = v;
    else in.tensor = c.inputs[i];
    n.inputs.push_back(std::move(in));
  }
  TensorList outs;
  if (inplace) {
    // The destination's storage now waits on this queue; readers recorded after this read
    // memory (the producer's value, if it was one, is not what it holds any more).
    n.target = c.inputs[0];
    Storage* s = n.target.impl()->storage.get();
    by_storage_.erase(s);
    s->pending.store(this, std::memory_order_release);
    outs.push_back(n.target);
  } else {
    for (int k = 0; k < n.meta.n; ++k) {
      const TensorMeta& m = n.meta.m[k];
      auto st = std::make_shared<Storage>();
      st->nbytes = size_t(numel_of(m.shape)) * itemsize(m.dtype);
      st->place = place_;
      st->pending.store(this, std::memory_order_release);
      auto impl = std::make_shared<TensorImpl>();
      impl->shape = m.shape;
      impl->strides = contiguous_strides(m.shape);
      impl->numel = numel_of(m.shape);
      impl->dtype = m.dtype;
      impl->device = c.device;
      const int32_t id = int32_t(values_.size());
      values_.push_back({node_id, k, st, st.get()});
      by_storage_.set(st.get(), id);
      n.outputs.push_back(id);
      impl->storage = std::move(st);
      outs.emplace_back(std::move(impl));
    }
  }
  n.origin = t_origin;
  return outs;
}

void Queue::flush() {
  std::lock_guard lock(mu_);
  if (flushing_ == std::this_thread::get_id()) return;
  flush_locked();
}

void Queue::materialize(Storage& s) {
  {
    std::lock_guard lock(mu_);
    // A kernel of this flush reading memory that a later node of it writes: it reads the value
    // before that write, which is what program order asks for.
    if (flushing_ == std::this_thread::get_id()) return;
    if (s.pending.load(std::memory_order_acquire) == this) flush_locked();
  }
  detail::raise_deferred_errors(place_);  // a host read is a sync point
}

void Queue::on_ready(Storage& s, std::function<void()> fn) {
  std::lock_guard lock(mu_);
  if (s.pending.load(std::memory_order_acquire) != this) {
    fn();  // already written
    return;
  }
  after_.push_back(std::move(fn));
}

void Queue::poison(const std::vector<Storage*>& writes, const std::vector<uint32_t>& starts,
                   size_t done, std::exception_ptr error) {
  // What ran is written; what did not is poisoned with the error, so no garbage is read.
  Poison* p = kept_poison(std::move(error));
  const size_t n = starts.empty() ? 0 : starts.size() - 1;
  for (size_t i = 0; i < n; ++i)
    for (uint32_t k = starts[i]; k < starts[i + 1]; ++k) {
      PendingWrite* me = this;
      writes[k]->pending.compare_exchange_strong(me, i < done ? nullptr : p);
    }
  for (size_t i = done; i < n; ++i)
    for (uint32_t k = starts[i]; k < starts[i + 1]; ++k)
      writes[k]->pending.store(p, std::memory_order_release);
}

void Queue::collect_writes(const std::vector<Node>& nodes, const std::vector<Value>& values,
                           bool with_targets, std::vector<Storage*>& writes,
                           std::vector<uint32_t>& starts) {
  writes.clear();
  starts.clear();
  starts.reserve(nodes.size() + 1);
  for (const Node& n : nodes) {
    starts.push_back(uint32_t(writes.size()));
    if (with_targets && n.target.defined()) writes.push_back(n.target.impl()->storage.get());
    for (int32_t v : n.outputs)
      if (!values[size_t(v)].storage.expired()) writes.push_back(values[size_t(v)].raw);
  }
  starts.push_back(uint32_t(writes.size()));
}

void poison_storages(const std::vector<std::weak_ptr<Storage>>& storages,
                     std::exception_ptr error) {
  Poison* p = kept_poison(std::move(error));
  for (const auto& w : storages)
    if (auto s = w.lock()) s->pending.store(p, std::memory_order_release);
}

void Queue::abandon(const std::string& why, bool keep_targets) {
  std::lock_guard lock(mu_);
  if (keep_targets)
    for (const Node& n : nodes_)
      if (n.target.defined()) {
        PendingWrite* me = this;
        n.target.impl()->storage->pending.compare_exchange_strong(me, nullptr);
      }
  std::vector<Storage*> writes;
  std::vector<uint32_t> starts;
  collect_writes(nodes_, values_, !keep_targets, writes, starts);
  try {
    detail::throw_device("fusion", why);
  } catch (...) {
    poison(writes, starts, 0, std::current_exception());
  }
  nodes_.clear();
  values_.clear();
  by_storage_.clear();
  after_.clear();
}

void Queue::flush_locked() {
  if (nodes_.empty() && after_.empty()) return;
  // The recorded work moves out (a kernel of this flush may record anew on this queue); the
  // queue takes the last flush's emptied buffers, which keep their capacity.
  std::vector<Node> nodes = std::move(nodes_);
  std::vector<Value> values = std::move(values_);
  std::vector<std::function<void()>> after = std::move(after_);
  nodes_ = std::move(spare_nodes_);
  values_ = std::move(spare_values_);
  nodes_.clear();
  values_.clear();
  by_storage_.clear();
  after_.clear();
  flushing_ = std::this_thread::get_id();
  // Every storage this flush writes, by the node that writes it.
  std::vector<Storage*> writes = std::move(spare_writes_);
  std::vector<uint32_t> starts = std::move(spare_write_starts_);
  collect_writes(nodes, values, true, writes, starts);
  size_t done = 0;
  const uint64_t faults = ember::detail::map_faults();
  try {
    run_plan(place_, nodes, values, &done);
    // A kernel touched a mapped page of a file that was cut (it read zeros): nothing it wrote
    // may be read.
    if (ember::detail::map_faults() != faults) [[unlikely]] {
      done = 0;
      store::detail::check_damaged("flush");
    }
  } catch (...) {
    const std::exception_ptr err = named_for_caller(std::current_exception(), nodes, done);
    poison(writes, starts, done, err);
    flushing_ = {};
    std::rethrow_exception(err);
  }
  for (Storage* s : writes) {
    PendingWrite* me = this;
    s->pending.compare_exchange_strong(me, nullptr, std::memory_order_acq_rel);
  }
  flushing_ = {};
  // Keep the buffers for the next flush (their elements go now: they hold tensors).
  nodes.clear();
  values.clear();
  if (nodes.capacity() > spare_nodes_.capacity()) spare_nodes_ = std::move(nodes);
  if (values.capacity() > spare_values_.capacity()) spare_values_ = std::move(values);
  spare_writes_ = std::move(writes);
  spare_write_starts_ = std::move(starts);
  for (auto& f : after) {
    try {
      f();
    } catch (...) {
      detail::defer_error(place_, std::current_exception());
    }
  }
}

OriginScope::OriginScope(const char* name) : prev_(t_origin) {
  if (!t_origin) t_origin = name;
}
OriginScope::~OriginScope() { t_origin = prev_; }

bool queued_op(OpId op) {
  switch (op_def(op).category) {
    case OpCategory::Unary: case OpCategory::Binary: case OpCategory::Ternary:
    case OpCategory::Reduce:
      return true;
    default:
      // bernoulli: dropout's mask, drawn in the kernel that applies it (random_node).
      return op == OpId::softmax || op == OpId::log_softmax || op == OpId::layer_norm ||
             op == OpId::bernoulli || op == OpId::rms_norm || op == OpId::nll_loss ||
             op == OpId::layer_norm_backward || op == OpId::rms_norm_backward || library_op(op);
  }
}

// The thread that loaded the library (the program's main thread).
static const std::thread::id g_main_thread = std::this_thread::get_id();
static std::thread::id main_thread() { return g_main_thread; }

Queue& queue_for(Device place) {
  // Queues are never freed: a storage may still point at one after its thread ended. A thread's
  // queues run when it exits and go back to a free list for the next thread.
  struct Pool {
    std::mutex mu;
    std::vector<Queue*> free[kNumBackends];
  };
  static Pool* pool = new Pool;
  struct Mine {
    std::array<Queue*, kNumBackends * 16> q{};
    ~Mine() {
      // The main thread's queues end with the process: nothing can wait for their work any more,
      // and the libraries it would call (oneDNN) may have torn their own thread state down.
      const bool exiting = std::this_thread::get_id() == main_thread();
      for (Queue* p : q) {
        if (!p) continue;
        if (exiting) {
          p->abandon("expected queued work to run before the program exited, found it still "
                     "queued (call ember::synchronize before main returns)");
        } else {
          try {
            p->flush();
          } catch (...) {
            detail::defer_error(p->place(), std::current_exception());
          }
        }
        std::lock_guard lock(pool->mu);
        pool->free[int(p->place().backend())].push_back(p);
      }
    }
  };
  thread_local Mine mine;
  Queue*& slot = mine.q[size_t(int(place.backend()) * 16 + (place.index() & 15))];
  if (!slot) {
    const Device where = place.without_layers();
    {
      std::lock_guard lock(pool->mu);
      auto& f = pool->free[int(where.backend())];
      for (size_t i = 0; i < f.size(); ++i)
        if (f[i]->place() == where) {
          slot = f[i];
          f.erase(f.begin() + int64_t(i));
          break;
        }
    }
    if (!slot) slot = new Queue(where);
  }
  return *slot;
}

}  // namespace ember::fusion

#pragma once
// The lazy queue of one thread on one device (private to ember/fusion): recorded ops, the
// pending storages they will write, and the flush that plans and runs them.
//
// A recorded op's outputs are tensors whose storage is pending on the queue (no memory yet). A
// later op that takes such a tensor as it was produced refers to the producer's value directly,
// so a fused kernel can keep it in registers; the storage is written only if something outside
// the queue still holds it when the queue runs. In-place writes (copy into an existing tensor)
// are recorded too: the destination's storage becomes pending until the queue runs.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ember/backends/backend.h"

namespace ember::fusion {

/// At most N elements inline, more on the heap: a recorded op's inputs and outputs, so that
/// recording one allocates nothing for them.
template <class T, size_t N>
class InlineList {
 public:
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T* begin() { return data(); }
  T* end() { return data() + n_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + n_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  void reserve(size_t n) {
    if (n > N) heap_.reserve(n);
  }
  void push_back(T v) {
    if (n_ < N && heap_.empty()) {
      inline_[n_++] = std::move(v);
      return;
    }
    if (heap_.empty())  // the inline elements move out first
      for (size_t i = 0; i < n_; ++i) heap_.push_back(std::exchange(inline_[i], T{}));
    heap_.push_back(std::move(v));
    ++n_;
  }
  void clear() {
    for (size_t i = 0; i < std::min(n_, N); ++i) inline_[i] = T{};
    heap_.clear();
    n_ = 0;
  }
  operator std::vector<T>() const { return {begin(), end()}; }  // NOLINT: implicit

 private:
  T* data() { return heap_.empty() ? inline_.data() : heap_.data(); }
  const T* data() const { return heap_.empty() ? inline_.data() : heap_.data(); }
  std::array<T, N> inline_{};
  std::vector<T> heap_;
  size_t n_ = 0;
};

/// One input of a recorded op: a tensor read from memory, or a value an earlier node produces.
struct NodeInput {
  Tensor tensor;         // memory (concrete, a constant, or a view of a pending storage)
  int32_t value = -1;    // else: index of an earlier node's output (see Queue::values_)
  DType dtype = DType::F32;
  bool defined = false;  // false for an absent optional operand
};

struct Node {
  OpId op{};
  Attrs attrs;
  MetaList meta;
  Device device;
  InlineList<NodeInput, 3> inputs;
  InlineList<int32_t, 2> outputs;  // value ids
  Tensor target;                 // copy(dst, src): the destination (written in place)
  const char* origin = nullptr;  // the composite op whose lowering queued it (errors name it)
};

/// While alive, the ops this thread queues come from the lowering of composite op `name` (the
/// outermost one counts): an error a queued op raises when its queue runs names `name`, the op
/// the program called, as the eager lowering does.
class OriginScope {
 public:
  explicit OriginScope(const char* name);
  ~OriginScope();
  OriginScope(const OriginScope&) = delete;
  OriginScope& operator=(const OriginScope&) = delete;

 private:
  const char* prev_;
};

/// A value a node produces: its storage (alive while something holds it) and geometry.
struct Value {
  int32_t node = -1;
  int out = 0;
  std::weak_ptr<Storage> storage;
  Storage* raw = nullptr;  // identity only (the storage may be gone)
};

/// Pending output storage -> value id, for the queue's lookups on every recorded input: open
/// addressing over a table that keeps its capacity across flushes, so recording an op allocates
/// no map node (a tiny op's whole budget is a microsecond or two).
class StorageIndex {
 public:
  /// The id stored for `s`, or -1.
  int32_t find(const Storage* s) const;
  void set(const Storage* s, int32_t id);
  void erase(const Storage* s);
  void clear();

 private:
  struct Slot {
    const Storage* key = nullptr;  // null: empty; kErased: a removed entry (probing continues)
    int32_t id = -1;
  };
  size_t slot_of(const Storage* s) const;
  void grow();
  std::vector<Slot> slots_;
  std::vector<uint32_t> used_;  // slots written since the last clear (clear resets only those)
  size_t live_ = 0, filled_ = 0;  // entries; entries plus erased slots
};

class Queue final : public PendingWrite {
 public:
  explicit Queue(Device place) : place_(place) {}
  /// Records `call` and returns its outputs (pending tensors).
  TensorList record(const OpCall& call);
  /// Runs everything recorded (all of it, in order); errors are rethrown to the caller, and
  /// the storages of ops that did not run are left poisoned with the error.
  void flush();
  /// Drops everything recorded without running it: what it would have written is poisoned
  /// with a DeviceError saying `why`. With `keep_targets`, tensors written in place keep the
  /// contents they had (an aborted ember::capture: none of the step ran).
  void abandon(const std::string& why, bool keep_targets = false);
  bool empty() const { return nodes_.empty(); }
  size_t size() const { return nodes_.size(); }
  Device place() const { return place_; }

  void materialize(Storage& s) override;
  void on_ready(Storage& s, std::function<void()> fn) override;

 private:
  void flush_locked();
  /// Records `c` into `n`, the node just added at the queue's end; returns its outputs.
  TensorList fill_node(const OpCall& c, Node& n);
  /// Node i wrote writes[starts[i] .. starts[i + 1]).
  void poison(const std::vector<Storage*>& writes, const std::vector<uint32_t>& starts,
              size_t done, std::exception_ptr error);
  /// Every storage the recorded nodes write (in-place targets too, unless not `with_targets`),
  /// by node, into `writes` and `starts`.
  static void collect_writes(const std::vector<Node>& nodes, const std::vector<Value>& values,
                             bool with_targets, std::vector<Storage*>& writes,
                             std::vector<uint32_t>& starts);
  int32_t input_value(const Tensor& t) const;
  Device place_;
  std::recursive_mutex mu_;
  std::thread::id flushing_;  // the thread running flush_locked (re-entrant reads are no-ops)
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  StorageIndex by_storage_;                   // pending output storage -> value
  std::vector<std::function<void()>> after_;  // on_ready callbacks, in order
  // The buffers of the last flush, emptied but with their capacity: the next flush (likely as
  // long) swaps them in instead of allocating (and page-faulting) a megabyte of nodes again.
  std::vector<Node> spare_nodes_;
  std::vector<Value> spare_values_;
  std::vector<Storage*> spare_writes_;
  std::vector<uint32_t> spare_write_starts_;
};

/// Leaves the storages still alive poisoned with `error`: every read of them rethrows it. For
/// what a kernel wrote after its flush returned and then reported a failure (a device's status
/// word): as a failed flush's outputs, never read as values.
void poison_storages(const std::vector<std::weak_ptr<Storage>>& storages, std::exception_ptr error);

/// The queue of the calling thread for `place` (created on first use).
Queue& queue_for(Device place);

/// Whether the fusion layer queues `op` (else it runs at once, below the layer).
bool queued_op(OpId op);

}  // namespace ember::fusion

#pragma once
// The lazy queue of one thread on one device (private to ember/fusion): recorded ops, the
// pending storages they will write, and the flush that plans and runs them.
//
// A recorded op's outputs are tensors whose storage is pending on the queue (no memory yet). A
// later op that takes such a tensor as it was produced refers to the producer's value directly,
// so a fused kernel can keep it in registers; the storage is written only if something outside
// the queue still holds it when the queue runs. In-place writes (copy into an existing tensor)
// are recorded too: the destination's storage becomes pending until the queue runs.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ember/backends/backend.h"

namespace ember::fusion {

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
  std::vector<NodeInput> inputs;
  std::vector<int32_t> outputs;  // value ids
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
  void poison(const std::vector<std::vector<Storage*>>& writes, size_t done,
              std::exception_ptr error);
  int32_t input_value(const Tensor& t) const;
  Device place_;
  std::recursive_mutex mu_;
  std::thread::id flushing_;  // the thread running flush_locked (re-entrant reads are no-ops)
  std::vector<Node> nodes_;
  std::vector<Value> values_;
  std::unordered_map<const Storage*, int32_t> by_storage_;  // pending output storage -> value
  std::vector<std::function<void()>> after_;                // on_ready callbacks, in order
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

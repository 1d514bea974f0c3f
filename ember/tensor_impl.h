#pragma once
// The state behind a Tensor handle and the storage its views share. Core, not part of the
// public set in ember/ember.h: ops, layers and backends include it.
//
// Lazy and asynchronous devices are the normal case: a storage may be *pending* (the op that
// writes it is queued), and a tensor may be a *graph constant* (a Scalar operand, held inline,
// with no device buffer). Host reads and kernels go through detail::ready(), never straight to
// `Storage::data`.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ember/tensor.h"

namespace ember {

struct Storage;
class Stream;

/// What a lazy device leaves in a storage whose contents are not yet written: the queue that
/// will write it. materialize() runs the queued work the storage depends on, clears
/// Storage::pending and may throw errors that queued kernels report. Queues outlive every
/// storage that points at them.
class PendingWrite {
 public:
  virtual ~PendingWrite() = default;
  virtual void materialize(Storage& s) = 0;
  /// Runs `fn` once `s` has been written (when its queue runs); an exception from `fn` is
  /// reported at the device's next sync (detail::defer_error).
  virtual void on_ready(Storage& s, std::function<void()> fn) = 0;
};

/// A block of device memory shared by every view of it.
struct Storage {
  /// Frees the block; `s` tells an asynchronous backend the stream of the last use.
  using FreeFn = void (*)(void* ctx, const Storage& s);
  void* data = nullptr;
  size_t nbytes = 0;
  Device place;  // backend and index only
  FreeFn free_fn = nullptr;
  void* free_ctx = nullptr;
  /// Bumped by every in-place write; autodiff compares it to catch edits of saved tensors.
  std::atomic<uint64_t> version{0};
  /// Set (once, before the storage is shared across threads) on storages that only writes
  /// bumping `version` may change: a loaded model's weights (ONNX initializers and folded
  /// constants). Backends may then keep derived forms of the contents (the cpu backend's
  /// oneDNN-blocked conv weights) keyed on `version`. Writing such a storage through a raw
  /// pointer (raw_data, data_ptr) is not seen by those caches.
  bool frozen = false;
  /// Non-null while queued work will write this storage (see PendingWrite).
  std::atomic<PendingWrite*> pending{nullptr};
  /// The stream that last used the block (null: none, or a synchronous backend). Asynchronous
  /// backends free in stream order after it.
  Stream* last_use = nullptr;
  /// Graph constants keep their value here (`data` points at it): no device buffer.
  alignas(8) unsigned char inline_bytes[16] = {};  // a c128 is 16 bytes

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (free_fn) free_fn(free_ctx, *this);
  }
};

namespace detail {
/// Counts live TensorImpl objects (memory tests: no growth over many training steps).
struct LiveCount {
  LiveCount();
  LiveCount(const LiveCount&);
  LiveCount& operator=(const LiveCount&) { return *this; }
  ~LiveCount();
};
/// Host backends report storage they hand out (+) and take back (-).
void track_storage_bytes(int64_t delta);
}  // namespace detail

/// The state behind a Tensor handle.
struct TensorImpl {
  Shape shape;
  Shape strides;  // in elements
  int64_t offset = 0;  // in elements
  int64_t numel = 1;
  DType dtype = DType::F32;
  bool contiguous = true;
  /// A 0-d tensor made from a Scalar operand: a weak type in promotion (torch's wrapped number).
  bool wrapped_number = false;
  /// A 0-d graph constant (every wrapped number is one): its value is `constant`, also held in
  /// the storage's inline bytes, so it needs no device buffer and no queue records it.
  bool is_constant = false;
  bool is_view = false;  // made by a view op: shares another tensor's storage
  Device device;
  Scalar constant;  // the value of a graph constant
  std::shared_ptr<Storage> storage;
  std::shared_ptr<void> autograd;  // owned and interpreted by the autodiff layer (optional)
  detail::LiveCount live_;
  void refresh();  // recompute numel and contiguous after shape/strides change
  /// The first element, after queued work that writes the storage has run.
  char* data() const;
};

namespace detail {
/// Registers ops and backends once; every entry point calls it (cheap after the first time).
void init();
/// Runs the queued work that writes `s`, if any (a sync point on lazy devices).
inline void ready(Storage& s) {
  if (PendingWrite* p = s.pending.load(std::memory_order_acquire)) [[unlikely]]
    p->materialize(s);
}
inline void ready(const Tensor& t) {
  if (t.defined() && t.impl()->storage) ready(*t.impl()->storage);
}
/// Throws ValueError "[op] msg" unless every element of the bool tensor `ok` is true, without a
/// host sync on lazy devices: a pending `ok` is checked when its queue runs and a failure is
/// thrown at the device's next sync; otherwise it is checked now.
void deferred_check(const Tensor& ok, const char* op, const std::string& msg);
/// Whether `t`'s contents are still to be written by queued work.
inline bool is_pending(const Tensor& t) {
  return t.defined() && t.impl()->storage &&
         t.impl()->storage->pending.load(std::memory_order_acquire) != nullptr;
}
/// A new tensor with fresh, uninitialised storage on `device`.
Tensor empty_tensor(const Shape& shape, DType dtype, Device device);
/// A 0-d graph constant holding `v` converted to `dtype`, on `device` (without its layers): no
/// device buffer and no copy. `wrapped` marks it a wrapped number (a weak type in promotion).
Tensor constant_tensor(Scalar v, DType dtype, Device device, bool wrapped);
/// Whether `t` is a graph constant (see TensorImpl::is_constant).
inline bool is_constant(const Tensor& t) { return t.defined() && t.impl()->is_constant; }
/// A view of `base`'s storage with the given geometry.
Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset);
/// Marks `t`'s storage frozen (see Storage::frozen); no-op for an undefined tensor.
inline void freeze(const Tensor& t) {
  if (t.defined() && t.impl()->storage) t.impl()->storage->frozen = true;
}
/// Same storage/geometry, different device tag (e.g. stripping layers).
Tensor retag(const Tensor& t, Device d);
}  // namespace detail

// Every read of a tensor's memory passes here, so a pending storage is written first (a kernel
// of a view op, which only moves metadata, never calls it and never forces a queue to run).
inline char* TensorImpl::data() const {
  detail::ready(*storage);
  return static_cast<char*>(storage->data) + offset * int64_t(itemsize(dtype));
}

}  // namespace ember

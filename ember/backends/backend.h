#pragma once
// The backend interface (private): storage, transfers, streams and events, and a kernel table.
// Backends register explicitly at start-up (ember::detail::init), never through static
// initialisers that a static link could drop.
//
// The interface is written for asynchronous devices; a synchronous host backend implements only
// `kind`, `is_host`, `allocate`, the two host copies and its kernels, and inherits the rest
// (streams are null, events are timestamps, async copies run at once).
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ember/ops/registry.h"
#include "ember/tensor_impl.h"

namespace ember {

/// An ordered queue of work on one device (a CUDA stream, a lazy device's queue). Null in an
/// OpCall means the device's default stream.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual Device device() const = 0;
};

/// A point in a stream's work: recorded, waited on by another stream, or synchronised with
/// the host. Host backends record a timestamp.
class Event {
 public:
  virtual ~Event() = default;
  /// Host time when the event completed, in milliseconds (for elapsed-time measurements).
  double host_ms = 0;
};

struct KernelEntry {
  Kernel fn = nullptr;
  DTypeMask dtypes = 0;  // of the op's key dtype (first input, or the output for creation ops)
};

class BackendImpl {
 public:
  virtual ~BackendImpl() = default;
  virtual Backend kind() const = 0;
  /// True when storage pointers are readable by the host CPU.
  virtual bool is_host() const = 0;
  /// Devices of this backend present (host backends: 1).
  virtual int device_count() const { return 1; }
  /// Throws DeviceError naming `op` unless device `index` of this backend can be used (no driver,
  /// no hardware, an index past the last device). Host backends accept any index.
  virtual void check_device(int index, const char* op) const {}
  /// Fresh storage of `nbytes` on device `place` (contents undefined), usable on `stream`.
  virtual std::shared_ptr<Storage> allocate(size_t nbytes, Device place) = 0;
  /// Synchronous copies between host memory and storage (host backends use memcpy).
  virtual void copy_from_host(Storage& dst, size_t dst_off, const void* src, size_t n) = 0;
  virtual void copy_to_host(void* dst, const Storage& src, size_t src_off, size_t n) = 0;

  // --- asynchronous devices (optional: the defaults are synchronous) ---
  /// Copies ordered on `stream`; the host buffer must stay valid until the stream reaches them
  /// (pinned staging is the backend's business).
  virtual void copy_from_host_async(Storage& dst, size_t dst_off, const void* src, size_t n,
                                    Stream* stream) {
    copy_from_host(dst, dst_off, src, n);
  }
  virtual void copy_to_host_async(void* dst, const Storage& src, size_t src_off, size_t n,
                                  Stream* stream) {
    copy_to_host(dst, src, src_off, n);
  }
  /// Device-to-device copy within this backend (between devices of it when indices differ).
  virtual void copy_device(Storage& dst, size_t dst_off, const Storage& src, size_t src_off,
                           size_t n, Stream* stream);
  /// The device's default stream (null for synchronous backends).
  virtual Stream* default_stream(Device d) { return nullptr; }
  /// Records an event at the current end of `stream`.
  virtual std::shared_ptr<Event> record_event(Stream* stream);
  /// Makes `stream` wait for `e` (no host block).
  virtual void wait_event(Stream* stream, const Event& e) {}
  /// Blocks the host until `e` has completed.
  virtual void synchronize_event(const Event& e) {}
  /// Blocks the host until all work queued on device `d` has completed; throws the first error
  /// a kernel reported since the last sync (see detail::defer_error).
  virtual void synchronize(Device d) {}
  /// Marks `s` as used on `stream`, so its block is freed only after that work.
  virtual void record_use(Storage& s, Stream* stream) { s.last_use = stream; }

  /// Whether this backend runs `call` with a kernel of its own (else the dispatcher uses the
  /// op's decomposition). The default reads the kernel table and its dtype mask; backends may
  /// refuse calls by shape or attribute.
  virtual bool supports(const OpCall& call) const;

  void set_kernel(OpId op, Kernel fn, DTypeMask dtypes) {
    kernels_[size_t(op)] = {fn, dtypes};
  }
  const KernelEntry& kernel(OpId op) const { return kernels_[size_t(op)]; }

 private:
  std::array<KernelEntry, kNumOps> kernels_{};
};

/// The dtype that selects a call's kernel: the first defined input's, else the first output's.
DType key_dtype(const OpCall& call);

/// The backend behind `b`, or nullptr when it was not built into this binary.
BackendImpl* backend_for(Backend b);
void register_backend(Backend b, std::unique_ptr<BackendImpl> impl);

namespace detail {
/// The op the backend is running on this thread (null outside a kernel): allocators name it in
/// their out-of-memory errors.
const char* current_op();
/// Kernels that run asynchronously report errors (an index out of range found on the device)
/// here; the next synchronisation of `d` rethrows the first one, whose message names the op.
void defer_error(Device d, std::exception_ptr e);
/// Rethrows and clears the first deferred error of `d`, if any.
void raise_deferred_errors(Device d);
}  // namespace detail

}  // namespace ember

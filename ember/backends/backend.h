#pragma once
// The backend interface (private): storage allocation, host transfers and a kernel table.
// Backends register explicitly at start-up (ember::detail::init), never through static
// initialisers that a static link could drop.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ember/ops/registry.h"

namespace ember {

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

/// A block of device memory shared by every view of it.
struct Storage {
  using FreeFn = void (*)(void* ctx, void* data, size_t nbytes);
  void* data = nullptr;
  size_t nbytes = 0;
  Device place;  // backend and index only
  FreeFn free_fn = nullptr;
  void* free_ctx = nullptr;
  /// Bumped by every in-place write; autodiff compares it to catch edits of saved tensors.
  std::atomic<uint64_t> version{0};
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (free_fn) free_fn(free_ctx, data, nbytes);
  }
};

/// The state behind a Tensor handle.
struct TensorImpl {
  Shape shape;
  Shape strides;  // in elements
  int64_t offset = 0;  // in elements
  int64_t numel = 1;
  DType dtype = DType::F32;
  bool contiguous = true;
  bool wrapped_number = false;  // a 0-d tensor made from a Scalar operand (a weak type)
  bool is_view = false;         // made by a view op: shares another tensor's storage
  Device device;
  std::shared_ptr<Storage> storage;
  std::shared_ptr<void> autograd;  // owned and interpreted by the autodiff layer (optional)
  detail::LiveCount live_;
  void refresh();  // recompute numel and contiguous after shape/strides change
  char* data() const { return static_cast<char*>(storage->data) + offset * int64_t(itemsize(dtype)); }
};

/// Bit i set: dtype i supported.
using DTypeMask = uint16_t;
inline constexpr DTypeMask mask_of(DType d) { return DTypeMask(1u << unsigned(d)); }
inline constexpr DTypeMask kAllDTypes = 0x3ff;
inline constexpr DTypeMask kFloatDTypes =
    mask_of(DType::F16) | mask_of(DType::BF16) | mask_of(DType::F32) | mask_of(DType::F64);
inline constexpr DTypeMask kIntDTypes = mask_of(DType::U8) | mask_of(DType::I8) |
                                        mask_of(DType::I16) | mask_of(DType::I32) |
                                        mask_of(DType::I64);
inline constexpr DTypeMask kNumericDTypes = kFloatDTypes | kIntDTypes;

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
  /// Fresh storage of `nbytes` on device `place` (contents undefined).
  virtual std::shared_ptr<Storage> allocate(size_t nbytes, Device place) = 0;
  /// Copies between host memory and storage (host backends use memcpy).
  virtual void copy_from_host(Storage& dst, size_t dst_off, const void* src, size_t n) = 0;
  virtual void copy_to_host(void* dst, const Storage& src, size_t src_off, size_t n) = 0;
  /// Waits for queued work (optional: host backends are synchronous).
  virtual void synchronize() {}

  void set_kernel(OpId op, Kernel fn, DTypeMask dtypes) {
    kernels_[size_t(op)] = {fn, dtypes};
  }
  const KernelEntry& kernel(OpId op) const { return kernels_[size_t(op)]; }

 private:
  std::array<KernelEntry, kNumOps> kernels_{};
};

/// The backend behind `b`, or nullptr when it was not built into this binary.
BackendImpl* backend_for(Backend b);
void register_backend(Backend b, std::unique_ptr<BackendImpl> impl);

namespace detail {
/// Registers ops and backends once; every entry point calls it (cheap after the first time).
void init();
/// A new tensor with fresh, uninitialised storage on `device`.
Tensor empty_tensor(const Shape& shape, DType dtype, Device device);
/// A view of `base`'s storage with the given geometry.
Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset);
/// Same storage/geometry, different device tag (e.g. stripping layers).
Tensor retag(const Tensor& t, Device d);
}  // namespace detail

}  // namespace ember

#pragma once
// Tensor: a value-semantics handle over shared storage with shape, strides, offset, dtype, device.
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/scalar.h"
#include "ember/shape.h"

namespace ember {

struct TensorImpl;
struct Storage;
class Tensor;
class Gradients;
struct BackwardOptions;
using TensorList = std::vector<Tensor>;

/// A host copy of a tensor's elements, row-major, with its shape and dtype.
struct TensorData {
  Shape shape;
  DType dtype = DType::F32;
  std::vector<uint8_t> bytes;
  int64_t numel() const { return numel_of(shape); }
  template <class T> std::span<const T> as() const {
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
};

/// Slicing spec for Tensor::index: an int, a Slice, None (new axis) or an Ellipsis.
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
};

class Tensor {
 public:
  /// An undefined tensor (no storage); most ops reject it.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  /// Size of dim `d` (negative counts from the end).
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t dim() const;
  int64_t numel() const;
  int64_t offset() const;
  DType dtype() const;
  Device device() const;
  size_t itemsize() const { return ember::itemsize(dtype()); }
  size_t nbytes() const { return size_t(numel()) * itemsize(); }
  bool is_contiguous() const;
  /// True when both share the same storage (one is a view of the other).
  bool is_alias_of(const Tensor& o) const;
  /// Raw pointer to the first element; host backends only (throws DeviceError otherwise).
  void* raw_data() const;
  template <class T> T* data_ptr() const {
    check_dtype(dtype_v<T>, "data_ptr");
    return static_cast<T*>(raw_data());
  }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // --- seeing data ---
  /// The single element of a one-element tensor, converted to T.
  template <class T> T item() const {
    T v{};
    copy_elements_to(&v, dtype_v<T>, 1, "item");
    return v;
  }
  Scalar item() const;
  /// All elements in row-major order, converted to T.
  template <class T> std::vector<T> to_vector() const {
    std::vector<T> v(static_cast<size_t>(numel()));
    copy_elements_to(v.data(), dtype_v<T>, numel(), "to_vector");
    return v;
  }
  TensorData data() const;
  std::string str() const;

  // --- conversions ---
  Tensor to(Device d) const;
  Tensor to(DType t) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor detach() const;

  // --- views and shape ---
  Tensor reshape(const Shape& s) const;
  Tensor view(const Shape& s) const;
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor permute(const Shape& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t d) const;
  Tensor unsqueeze(int64_t d) const;
  Tensor expand(const Shape& s) const;
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
               int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor diagonal(int64_t offset = 0, int64_t d0 = 0, int64_t d1 = 1) const;
  /// t[i] on the first dim.
  Tensor operator[](int64_t i) const { return select(0, i); }

  // --- autodiff (ember/autodiff.h) ---
  /// Marks this tensor as a leaf whose gradient backward() computes; moves it (without a copy)
  /// onto its device's autodiff() form so ops on it record history.
  Tensor& requires_grad_(bool on = true);
  Tensor& set_requires_grad(bool on) { return requires_grad_(on); }
  bool requires_grad() const;
  /// True for tensors not produced by a recorded op (user-created, or requires_grad_ set).
  bool is_leaf() const;
  /// Backpropagates from this tensor; returns the gradients of every leaf reached.
  Gradients backward() const;
  Gradients backward(const BackwardOptions& o) const;
  /// Shorthand for grads.get(*this).
  Tensor grad(const Gradients& grads) const;

  // --- in place (bump the version counter) ---
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(Scalar v);
  Tensor& zero_() { return fill_(0); }
  Tensor& add_(const Tensor& o, Scalar alpha = 1);
  Tensor& sub_(const Tensor& o, Scalar alpha = 1);
  Tensor& mul_(const Tensor& o);
  Tensor& div_(const Tensor& o);
  Tensor& add_(Scalar o);
  Tensor& mul_(Scalar o);
  Tensor& clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi);
  Tensor& uniform_(double lo = 0, double hi = 1);
  Tensor& normal_(double mean = 0, double std = 1);
  /// Storage version: bumped by every in-place write to any view of this storage.
  uint64_t version() const;

  // --- common maths as methods (the free functions in ember/ops.h do the work) ---
  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor pow(Scalar e) const;
  /// torch.matmul(*this, other).
  Tensor matmul(const Tensor& other) const;

 private:
  void check_dtype(DType want, const char* op) const;
  void copy_elements_to(void* dst, DType dst_dtype, int64_t expect, const char* op) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// --- making tensors from host data ---
/// A tensor of `shape` holding `values` (converted to `dtype`, default: T's dtype).
Tensor from_blob_copy(const void* data, DType src_dtype, const Shape& shape, DType dtype,
                      Device device);
template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, std::optional<DType> dtype = {},
              std::optional<Device> device = {});
/// A 1-D tensor from a list: `tensor({1.f, 2.f, 3.f})`. Integer lists give int64 like PyTorch.
template <class T>
Tensor tensor(std::initializer_list<T> values, std::optional<DType> dtype = {},
              std::optional<Device> device = {});
/// A 0-d tensor holding `v`.
Tensor scalar_tensor(Scalar v, std::optional<DType> dtype = {}, std::optional<Device> device = {});

/// `d`, or the default device when empty.
Device resolve_device(std::optional<Device> d);
namespace detail {
void check_value_count(size_t n, const Shape& shape);
}

template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, std::optional<DType> dtype,
              std::optional<Device> device) {
  static_assert(!std::is_same_v<T, bool>, "use std::vector<uint8_t> with dtype kBool");
  detail::check_value_count(values.size(), shape);
  return from_blob_copy(values.data(), dtype_v<T>, shape, dtype.value_or(dtype_v<T>),
                        resolve_device(device));
}
template <class T>
Tensor tensor(std::initializer_list<T> values, std::optional<DType> dtype,
              std::optional<Device> device) {
  std::vector<T> v(values);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    dtype = dtype.value_or(DType::I64);
  return tensor(v, Shape{int64_t(v.size())}, dtype, device);
}

}  // namespace ember

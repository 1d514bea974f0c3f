#pragma once
// Tensor: a value-semantics handle over shared storage with shape, strides, offset, dtype, device.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/scalar.h"
#include "ember/ops/op_list.h"
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

struct TensorOptions;
namespace detail {
/// A TensorOptions field, usable both ways: as ember's designated initializer and optional
/// (`{.dtype = kF64}`, `o.dtype.value_or(kF32)`), and as libtorch's builder and getter
/// (`TensorOptions().dtype(kF32).requires_grad(true)` is a copy of the options with the field
/// set; `o.dtype()` is the value, or the default when unset).
template <class T, int Field> struct OptionField : std::optional<T> {
  using std::optional<T>::optional;
  OptionField() = default;
  OptionField(const std::optional<T>& v) : std::optional<T>(v) {}  // NOLINT: implicit
  OptionField& operator=(const T& v) {
    std::optional<T>::operator=(v);
    return *this;
  }
  TensorOptions operator()(T v) const;
  T operator()() const;
};
/// The requires_grad field: a plain flag (false unless set), with the builder and getter.
struct GradFlag {
  GradFlag(bool v = false) : on(v) {}  // NOLINT: implicit, like a bool
  operator bool() const { return on; }  // NOLINT
  TensorOptions operator()(bool v) const;
  bool operator()() const { return on; }
  bool on;
};
}  // namespace detail

/// dtype/device for creation ops (empty fields mean "the default"), and requires_grad: the new
/// tensor is a leaf that requires grad, as if requires_grad_() were called on it. Written
/// ember's way, `zeros({2}, {.dtype = kF64, .requires_grad = true})`, or libtorch's,
/// `zeros({2}, TensorOptions().dtype(kF64).requires_grad(true))`.
struct TensorOptions {
  detail::OptionField<DType, 0> dtype = {};
  detail::OptionField<Device, 1> device = {};
  detail::GradFlag requires_grad = {};
};
/// libtorch's option shorthands: zeros({2}, dtype(kF64)), randn({3}, requires_grad()).
inline TensorOptions dtype(DType d) { return {d, {}, {}}; }
inline TensorOptions device(Device d) { return {{}, d, {}}; }
inline TensorOptions requires_grad(bool on = true) { return {{}, {}, on}; }

namespace detail {
// A field's options: the TensorOptions it is a member of (the fields know their offsets), so a
// builder call copies the whole options, not only the field.
template <class F> const TensorOptions& options_holding(const F* field, size_t offset) {
  static_assert(std::is_standard_layout_v<TensorOptions>);
  return *reinterpret_cast<const TensorOptions*>(reinterpret_cast<const char*>(field) - offset);
}
template <class T, int Field> TensorOptions OptionField<T, Field>::operator()(T v) const {
  if constexpr (Field == 0) {
    TensorOptions o = options_holding(this, offsetof(TensorOptions, dtype));
    o.dtype = v;
    return o;
  } else {
    TensorOptions o = options_holding(this, offsetof(TensorOptions, device));
    o.device = v;
    return o;
  }
}
template <class T, int Field> T OptionField<T, Field>::operator()() const {
  if constexpr (Field == 0) return this->value_or(default_dtype());
  else return this->value_or(default_device());
}
inline TensorOptions GradFlag::operator()(bool v) const {
  TensorOptions o = options_holding(this, offsetof(TensorOptions, requires_grad));
  o.requires_grad = v;
  return o;
}
}  // namespace detail

namespace detail {
/// One integer dim, not a bool: libtorch's IntArrayRef converts from one integer, ember's Shape
/// does not, so the reductions have a form for it (a template, so that `{}` and `{1}` still
/// mean a Shape).
template <class I> concept IntegralDim = std::is_integral_v<I> && !std::is_same_v<I, bool>;
/// libtorch's `unbiased` flag (std(bool), var(bool)); a template so `{1}` stays a Shape.
template <class B> concept ExactlyBool = std::is_same_v<B, bool>;
}  // namespace detail

class TensorIndex;
using TensorPair = std::tuple<Tensor, Tensor>;

/// A slice for Tensor::index, like Python's start:stop:step (torch::indexing::Slice): an absent
/// bound means the start or end of the dim, an absent step 1.
struct Slice {
  Slice(std::optional<int64_t> start_ = {}, std::optional<int64_t> stop_ = {},
        std::optional<int64_t> step_ = {})
      : start(start_), stop(stop_), step(step_.value_or(1)) {}
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
  /// Writes str() and a newline to stdout (libtorch's print()).
  void print() const;

  // --- conversions ---
  Tensor to(Device d) const;
  Tensor to(DType t) const;
  /// Moves to `d` and converts to `t` (one step when either is already right).
  Tensor to(Device d, DType t) const;
  Tensor to(const TensorOptions& o) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor detach() const;
  /// This tensor's dtype and device, for creating tensors like it: zeros(s, t.options()).
  TensorOptions options() const { return {dtype(), device()}; }
  /// libtorch's spelling of shape().
  const Shape& sizes() const { return shape(); }
  int64_t ndimension() const { return dim(); }
  size_t element_size() const { return itemsize(); }
  DType scalar_type() const { return dtype(); }
  bool is_floating_point() const { return is_floating(dtype()); }
  bool is_complex() const { return ember::is_complex(dtype()); }
  bool is_cuda() const { return device().backend() == Backend::Cuda; }
  /// Whether the data sits in host memory (flex or cpu).
  bool is_cpu() const { return device().is_cpu(); }
  /// to(Device::cuda(index)).
  Tensor cuda(int index = 0) const;
  /// Itself when it already lives in host memory (flex or cpu), else a copy on Device(kCPU)
  /// (the default device when that is a host one, else flex).
  Tensor cpu() const;

  // --- indexing like torch::indexing: t.index({Slice(1, None, 2), 0, Ellipsis, None}) ---
  /// Ints and slices give views; None inserts a dim; bool masks and integer tensors index
  /// with PyTorch's advanced-indexing rules (a copy).
  Tensor index(const std::vector<TensorIndex>& indices) const;
  /// Writes `v` (broadcast) into index(indices) (the same indices), in place.
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& v);
  Tensor& index_put_(const std::vector<TensorIndex>& indices, Scalar v);

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
  /// Backpropagates from this tensor; returns the gradients of every leaf reached, and (as
  /// libtorch does) also adds each one into that leaf's grad() slot.
  Gradients backward() const;
  Gradients backward(const BackwardOptions& o) const;
  /// libtorch's form: `gradient` is d(loss)/d(this) for a non-scalar tensor; retain_graph
  /// defaults to create_graph.
  Gradients backward(const Tensor& gradient, std::optional<bool> retain_graph = {},
                     bool create_graph = false) const;
  /// Shorthand for grads.get(*this).
  Tensor grad(const Gradients& grads) const;
  /// The gradient accumulated in this tensor's slot by backward() calls since it was last
  /// cleared (zero_grad); undefined when there is none, or for a non-leaf without retain_grad().
  Tensor grad() const;
  /// The slot itself, to set or reset it: `w.mutable_grad() = Tensor()`.
  Tensor& mutable_grad() const;
  /// Makes backward() fill grad() of this non-leaf tensor too (a no-op on leaves).
  void retain_grad() const;
  bool retains_grad() const;

  // --- in place (bump the version counter; an edit of a tensor saved for backward fails
  // there) ---
  Tensor& copy_(const Tensor& src);
  Tensor& fill_(Scalar v);
  Tensor& zero_() { return fill_(0); }
  Tensor& uniform_(double lo = 0, double hi = 1);
  Tensor& normal_(double mean = 0, double std = 1);
  /// Storage version: bumped by every in-place write to any view of this storage.
  uint64_t version() const;
  /// In place, like add_ (a view written through writes its base: x[0] += 1).
  Tensor& operator+=(const Tensor& o);
  Tensor& operator+=(Scalar o);
  Tensor& operator-=(const Tensor& o);
  Tensor& operator-=(Scalar o);
  Tensor& operator*=(const Tensor& o);
  Tensor& operator*=(Scalar o);
  Tensor& operator/=(const Tensor& o);
  Tensor& operator/=(Scalar o);
  Tensor& operator%=(const Tensor& o);
  Tensor& operator%=(Scalar o);
  Tensor& operator&=(const Tensor& o);
  Tensor& operator&=(Scalar o);
  Tensor& operator|=(const Tensor& o);
  Tensor& operator|=(Scalar o);
  Tensor& operator^=(const Tensor& o);
  Tensor& operator^=(Scalar o);
  Tensor& operator<<=(const Tensor& o);
  Tensor& operator<<=(Scalar o);
  Tensor& operator>>=(const Tensor& o);
  Tensor& operator>>=(Scalar o);

  // --- the ops as methods with libtorch's argument order and defaults, and their in-place
  // `_` forms (ember/tensor_methods.h derives them from the op list) ---
#define EMBER_METHOD_DEFAULT(...) = __VA_ARGS__
#define EMBER_METHOD(ret, name, params, call) ret name params const;
#define EMBER_INPLACE(name, params, call) Tensor& name params;
#define EMBER_TEMPLATE_METHOD(tparam, name, params, call) \
  template <tparam> Tensor name params const { return call; }
#include "ember/tensor_methods.h"
#undef EMBER_METHOD
#undef EMBER_INPLACE
#undef EMBER_TEMPLATE_METHOD
#undef EMBER_METHOD_DEFAULT

 private:
  /// Writes an op's result into this tensor (in-place forms): its dtype must cast to ours
  /// (PyTorch's can_cast) and its shape must be ours.
  Tensor& assign_(const Tensor& result, const char* op);
  void check_dtype(DType want, const char* op) const;
  void copy_elements_to(void* dst, DType dst_dtype, int64_t expect, const char* op) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

namespace indexing {
using ember::Slice;
/// A new size-1 dim (Python's None); also "no bound" in a Slice.
inline constexpr std::nullopt_t None = std::nullopt;
struct EllipsisIndexType {};
/// As many ":" as the other indices leave dims.
inline constexpr EllipsisIndexType Ellipsis{};
}  // namespace indexing

/// One entry of Tensor::index: an integer, a Slice, None, Ellipsis, a bool or a tensor (bool
/// mask or int64/int32 indices).
class TensorIndex {
 public:
  enum class Kind : uint8_t { Int, Slice, None, Ellipsis, Bool, Tensor };
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T i) : kind_(Kind::Int), int_(int64_t(i)) {}  // NOLINT: implicit, like libtorch
  TensorIndex(bool b) : kind_(Kind::Bool), int_(b) {}      // NOLINT
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}  // NOLINT
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}       // NOLINT
  TensorIndex(indexing::EllipsisIndexType) : kind_(Kind::Ellipsis) {}  // NOLINT
  TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT
  Kind kind() const { return kind_; }
  int64_t integer() const { return int_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t int_ = 0;
  Slice slice_;
  Tensor tensor_;
};

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
/// A 2-D tensor from nested lists, rows first: tensor({{1.0, 2.0}, {3.0, 4.0}}) (integers give
/// int64); rows of different lengths throw ShapeError.
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows,
              std::optional<DType> dtype = {}, std::optional<Device> device = {});
/// A 3-D tensor from nested lists.
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> planes,
              std::optional<DType> dtype = {}, std::optional<Device> device = {});
/// libtorch's tensor({1.0, 2.0}, requires_grad()) and tensor({1, 2}, dtype(kF32)).
template <class T>
Tensor tensor(std::initializer_list<T> values, const TensorOptions& o) {
  Tensor t = tensor(values, std::optional<DType>(o.dtype), std::optional<Device>(o.device));
  if (o.requires_grad) t.requires_grad_();
  return t;
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows, const TensorOptions& o) {
  Tensor t = tensor(rows, std::optional<DType>(o.dtype), std::optional<Device>(o.device));
  if (o.requires_grad) t.requires_grad_();
  return t;
}
/// A 0-d tensor holding `v`.
Tensor scalar_tensor(Scalar v, std::optional<DType> dtype = {}, std::optional<Device> device = {});

/// `d`, or the default device when empty.
Device resolve_device(std::optional<Device> d);
namespace detail {
void check_value_count(size_t n, const Shape& shape);
/// Throws ShapeError unless a nested list's row has `want` entries.
void check_row_length(size_t got, size_t want);
template <class T>
void append_rows(std::vector<T>& out, std::initializer_list<std::initializer_list<T>> rows,
                 size_t cols) {
  for (const auto& r : rows) {
    check_row_length(r.size(), cols);
    out.insert(out.end(), r.begin(), r.end());
  }
}
template <class T> std::optional<DType> list_dtype(std::optional<DType> d) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return d.value_or(DType::I64);
  else return d;
}
}  // namespace detail

template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, std::optional<DType> dtype,
              std::optional<Device> device) {
  static_assert(!std::is_same_v<T, bool>, "use std::vector<uint8_t> with dtype kBool");
  detail::check_value_count(values.size(), shape);
  return from_blob_copy(values.data(), dtype_v<T>, shape, dtype.value_or(dtype_v<T>),
                        resolve_device(device));
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows, std::optional<DType> dtype,
              std::optional<Device> device) {
  const size_t cols = rows.size() ? rows.begin()->size() : 0;
  std::vector<T> v;
  detail::append_rows(v, rows, cols);
  return tensor(v, Shape{int64_t(rows.size()), int64_t(cols)}, detail::list_dtype<T>(dtype),
                device);
}
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> planes,
              std::optional<DType> dtype, std::optional<Device> device) {
  const size_t rows = planes.size() ? planes.begin()->size() : 0;
  const size_t cols = rows ? planes.begin()->begin()->size() : 0;
  std::vector<T> v;
  for (const auto& p : planes) {
    detail::check_row_length(p.size(), rows);
    detail::append_rows(v, p, cols);
  }
  return tensor(v, Shape{int64_t(planes.size()), int64_t(rows), int64_t(cols)},
                detail::list_dtype<T>(dtype), device);
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

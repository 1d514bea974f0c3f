#pragma once
// The op registry: the enum and per-op definitions derived from EMBER_OPS, the attribute bag that
// travels with every call, and the dispatcher entry point.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ember/ops/op_list.h"
#include "ember/tensor.h"

namespace ember {

enum class OpCategory : uint8_t {
  Creation, Random, Unary, Binary, Ternary, Reduce, Scan, Matmul, Index, Layout, Conv, Pool,
  Composite,
  Linalg,  // matrix decompositions and functions, FFT transforms: kernels of their own
  User  // ops registered at run time: opaque to fusion (their kernels are the user's)
};
const char* category_name(OpCategory c);

enum class OpId : uint16_t {
#define EMBER_X(name, cat) name,
  EMBER_OPS(EMBER_X)
#undef EMBER_X
};
inline constexpr int kNumOps = 0
#define EMBER_X(name, cat) +1
    EMBER_OPS(EMBER_X)
#undef EMBER_X
    ;

/// Attributes of one call. Generic slots (like ggml's op_params) keep dispatch allocation-free and
/// make a call hashable, comparable and serialisable; each op documents its use of the slots where
/// its inference lives. Unused slots stay at their defaults. Modes are small enums (ember/ops/
/// modes.h) parsed and checked at the front end: kernels never compare strings.
struct Attrs {
  IntVec ints;   // dims / shape / permutation / kernel size / einsum subscripts
  IntVec ints2;  // stride
  IntVec ints3;  // padding
  IntVec ints4;  // dilation / output padding
  std::array<int64_t, 4> i{};  // dim, groups, counts, ...
  std::array<double, 4> f{};   // eps, alpha, beta, p, ...
  std::array<bool, 4> b{};     // keepdim and other flags
  std::array<Scalar, 3> s{};   // fill values, scalar operands
  DType dtype = DType::F32;
  bool has_dtype = false;      // `dtype` was given (creation ops, casts, sum(dtype=...))
  uint8_t mode = 0;            // the op's mode enum (rounding, reduction, padding, ...)
  Device device{};             // creation ops: where the result lives
  /// Random ops: the Philox key and counter offset, drawn from the device's generator when the
  /// op is called (not when it runs), so deferred, fused or replayed work draws the eager stream.
  uint64_t seed = 0, offset = 0;

  bool operator==(const Attrs& o) const;
  /// A hash of every field (equal attrs hash equal).
  size_t hash() const;
};

/// Shape and dtype of one output, known before any kernel runs. A dim of -1 marks a size that
/// depends on the data (nonzero, masked_select).
struct TensorMeta {
  Shape shape;
  DType dtype = DType::F32;
};
/// Inference results: up to kMaxOutputs fixed outputs, or a variadic list (split, unbind, ...).
struct MetaList {
  static constexpr int kMaxOutputs = 4;
  std::array<TensorMeta, kMaxOutputs> m;
  int n = 0;
  bool variadic = false;  // the kernel decides the output count
  DType compute = DType::F32;  // binary/ternary ops: the dtype inputs are promoted to
  TensorMeta& add(Shape s, DType d) {
    m[n] = {std::move(s), d};
    return m[n++];
  }
};

/// Everything a layer or kernel sees of one call.
class Stream;
struct OpCall {
  OpId op;
  const Attrs& attrs;
  std::span<const Tensor> inputs;
  const MetaList& meta;
  Device device;  // where the op runs (inputs' common device, or attrs.device for creation)
  /// The stream the op is ordered on (null: the device's default stream).
  Stream* stream = nullptr;
  /// Outputs placed by the caller (a planner): empty, or one tensor per meta output with that
  /// shape and dtype, which the kernel writes into and returns.
  std::span<const Tensor> out = {};
};

/// Infers output metas for `op` (one function may serve a family) and throws on bad input.
using InferFn = void (*)(OpId op, const Attrs&, std::span<const Tensor>, MetaList&);

/// What a VJP rule sees: the op's attributes, its inputs and outputs as they were in the
/// forward pass, and the cotangents of its outputs (undefined = zero; never all undefined).
struct VjpCtx {
  OpId op;
  const Attrs& attrs;
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  std::span<const Tensor> grads;
  std::span<const bool> needs;  // needs[i]: input i wants a gradient (rules may skip the others)
  const Tensor& input(size_t i) const { return inputs[i]; }
  const Tensor& output(size_t i) const { return outputs[i]; }
  const Tensor& grad(size_t i) const { return grads[i]; }
  bool needs_grad(size_t i) const { return i < needs.size() && needs[i]; }
};
/// A VJP rule, written in ember ops (so it runs on every backend and can itself be
/// differentiated): one gradient per input, shaped like that input (undefined = none/zero).
using VjpFn = TensorList (*)(const VjpCtx&);
using DecompFn = TensorList (*)(const Attrs&, std::span<const Tensor>);
/// A backend kernel: reads call.inputs, returns the outputs (fresh storage, views, or call.out).
using Kernel = TensorList (*)(const OpCall&);

struct OpDef {
  const char* name;
  OpCategory category;
  InferFn infer = nullptr;      // required
  DecompFn decompose = nullptr; // composite ops: a lowering into other ops (optional)
  VjpFn vjp = nullptr;          // the autodiff rule (ember/autodiff/rules_*.cpp)
  bool differentiable = true;   // false for comparisons, argmax, integer ops, ...
};

/// The definition of `op` (name, category, inference, decomposition, ...).
const OpDef& op_def(OpId op);
OpDef& op_def_mut(OpId op);
inline const char* op_name(OpId op) { return op_def(op).name; }
/// Registers the same inference function for every op in `category`.
void set_infer_for_category(OpCategory category, InferFn fn);
/// Looks an op up by name; throws ValueError when unknown.
OpId op_from_name(std::string_view name);

/// Runs `op`: infers output shapes/dtypes (throwing on bad input), then passes the call through
/// the device's layers down to the backend kernel or, if it has none, the op's decomposition.
TensorList dispatch(OpId op, const Attrs& attrs, std::span<const Tensor> inputs);
/// dispatch() for ops with exactly one output.
Tensor dispatch1(OpId op, const Attrs& attrs, std::span<const Tensor> inputs);
inline Tensor dispatch1(OpId op, const Attrs& attrs, std::initializer_list<Tensor> inputs) {
  return dispatch1(op, attrs, std::span<const Tensor>(inputs.begin(), inputs.size()));
}
inline TensorList dispatch(OpId op, const Attrs& attrs, std::initializer_list<Tensor> inputs) {
  return dispatch(op, attrs, std::span<const Tensor>(inputs.begin(), inputs.size()));
}

/// While alive, ops dispatched on this thread skip the layers above `layer` in their device's
/// stack: a layer that expands an op's decomposition itself (so that its sub-ops pass through
/// it) keeps the layers above from seeing them a second time.
class LayerFloor {
 public:
  explicit LayerFloor(const Layer* layer);
  ~LayerFloor();
  LayerFloor(const LayerFloor&) = delete;
  LayerFloor& operator=(const LayerFloor&) = delete;

 private:
  const Layer* prev_;
};

/// Calls `op` on the backend directly, skipping layers (what layers' `next` ends in).
TensorList run_on_backend(const OpCall& call);

/// A decorator in a device's layer stack (autodiff, fusion, a counting probe, ...). It sees every
/// op on its device and forwards to `next`; it never holds device code.
class Layer {
 public:
  virtual ~Layer() = default;
  virtual const char* name() const = 0;
  class Next {
   public:
    Next(std::span<Layer* const> rest) : rest_(rest) {}
    TensorList operator()(const OpCall& call) const;
   private:
    std::span<Layer* const> rest_;
  };
  virtual TensorList call(const OpCall& call, const Next& next) = 0;
  /// True for layers that defer work (a lazy, fusing layer): Device::eager() drops them.
  virtual bool defers() const { return false; }
  /// True for a layer that must see ops before every other layer (mixed precision: its casts
  /// are recorded by autodiff): layers added later as outermost go below it, and a device keeps
  /// one such layer (optional).
  virtual bool leads() const { return false; }
  /// Runs everything this layer has queued for device `d` (optional: layers that queue nothing
  /// have nothing to do). Called by ember::synchronize and before a device's data is read.
  virtual void sync(Device d) {}
};

}  // namespace ember

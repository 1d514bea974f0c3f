#pragma once
// The pieces every fused group is made of (private to ember/fusion): the memory operands and
// scalar parameters of a generated kernel, and a chain of pointwise nodes traced into kl IR over
// one shape. Pointwise groups are a chain; row groups are a chain (the prologue) ending in a
// reduction.
#include <span>
#include <vector>

#include "ember/fusion/queue.h"
#include "ember/kl/cache/kernel_cache.h"
#include "ember/kl/expr.h"

namespace ember::fusion {

/// Where a memory operand of a group comes from.
struct MemOperand {
  int32_t node = -1, input = -1;  // an input tensor of a node (node, input index), or
  int32_t value = -1;             // a value an earlier step stored
};
/// Where a scalar parameter comes from.
struct ScalarSource {
  enum class Kind : uint8_t {
    OpScalar,  // numeric attribute `index` of the node (kl::op_scalars)
    Constant,  // the node's constant operand `index`
    Fixed,     // `fixed` (a fact of the shapes, e.g. a row length)
    Eps,       // the node's epsilon (layer_norm / rms_norm)
    Philox,    // a random node's draw: `index` 0 its seed, 1 its counter offset (I64), 2 its p
  } kind = Kind::OpScalar;
  int32_t node = -1;
  int32_t index = 0;
  Scalar fixed;
};

/// A kernel's operands: memory inputs (with their element strides over the kernel's shape) and
/// scalar parameters, in kernel order.
struct Operands {
  std::vector<MemOperand> inputs;
  std::vector<DType> in_dtypes;
  std::vector<std::vector<int64_t>> strides;
  std::vector<ScalarSource> scalars;
  std::vector<DType> scalar_dtypes;

  /// Node `ni`'s input `j` (a tensor in memory) as an operand over `shape` (shared when the
  /// same tensor is already one).
  int32_t add_tensor(const std::vector<Node>& nodes, int32_t ni, int32_t j, const Shape& shape);
  /// Value `v` (stored by an earlier step, contiguous) as an operand over `shape`.
  int32_t add_value(int32_t v, const std::vector<Node>& nodes, const std::vector<Value>& values,
                    const Shape& shape);
  int32_t add_scalar(ScalarSource s, DType d);

  /// The scalar parameters' values for this flush's nodes.
  std::vector<Scalar> scalar_values(const std::vector<Node>& nodes) const;
  /// The memory operands' data pointers (`vals`: every stored value's tensor).
  void buffers(const std::vector<Node>& nodes, const std::vector<Tensor>& vals,
               std::vector<const void*>& out) const;
};

/// Pointwise nodes over one shape, in program order, traced together. A chain may hold in-place
/// copies of its values into tensors of its shape (their stores); a later node's read of such a
/// tensor takes the copied value (`forwards`) instead of memory.
struct Chain {
  struct Forward {
    int32_t node, input, value;
  };
  std::vector<int32_t> nodes;
  std::vector<Forward> forwards;
  std::vector<std::vector<int32_t>> slot;  // per node input: operand (>= 0), scalar (-2 - k),
                                           // chain value or absent (-1)
  std::vector<std::vector<int32_t>> value_in;  // per node input: the chain value it reads
  std::vector<int32_t> first_scalar;       // per node: its first op scalar
  std::vector<DType> compute;              // per node: the dtype it computes in

  /// Makes the operands the chain reads (appended to `ops`).
  void collect(Operands& ops, const std::vector<Node>& all, const std::vector<Value>& values,
               const Shape& shape);
  /// Traces the chain on loaded operands and scalars: the Expr of each value the chain makes,
  /// indexed by value id (others stay invalid). `pos` (the elements' row-major index in the
  /// chain's shape) is needed by random nodes only (see positional).
  std::vector<kl::Expr> trace(const std::vector<Node>& all, size_t nvalues,
                              std::span<const kl::Expr> loaded, std::span<const kl::Expr> scalars,
                              const kl::Expr& pos = {}) const;
  bool makes(const std::vector<Node>& all, int32_t v) const;
  /// Whether a node of the chain draws random numbers from the element's position (dropout's
  /// bernoulli mask): only the pointwise template hands the trace one, so such a chain is a
  /// pointwise group of its own, never a row kernel's prologue or epilogue nor a multi-tensor
  /// member.
  bool positional(const std::vector<Node>& all) const;
};

/// The dtype node `n` computes in (its inputs' promotion, as the elementwise table says).
DType compute_of(const Node& n);
/// Whether `n` is a bernoulli with a fixed probability (dropout's mask): a pointwise node whose
/// value is drawn in the kernel (kl/random.h), from the Philox state the op drew when called.
bool random_node(const Node& n);
/// Element strides of `t` over `shape` (right-aligned broadcasting: 0 where t has size 1 or no
/// dim).
std::vector<int64_t> strides_over(const Tensor& t, const Shape& shape);

/// A group's compiled kernel: its IR and the compiled source holding it (may still compile).
struct Compiled {
  kl::Kernel kernel;
  kl::KernelHandle handle;
  int fn = 0;  // the kernel's index among the handle's entry points
  bool ready(bool wait) const {
    return handle.valid() && (wait || handle.ready()) && handle.get().ok;
  }
};

}  // namespace ember::fusion

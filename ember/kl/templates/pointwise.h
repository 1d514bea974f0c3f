#pragma once
// The pointwise template: N inputs and M outputs over one (collapsed) shape, each operand with
// its own dtype and strides (a stride of 0 broadcasts), and a body callback that maps the loaded
// inputs to the outputs. Extents and strides are index parameters, so one compiled kernel serves
// every shape with the same rank, broadcast pattern and dtypes.
//
// Work split: a work item is one element of the output, in row-major order; the kernel walks
// rows of the innermost dim, with `lanes`-wide vectors and a scalar tail when every operand is
// contiguous (or broadcast) along it. The same kernel serves a GPU with a grain of one vector per
// thread (pointwise_grain): each thread one 16-byte chunk, coalesced.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ember/kl/abi.h"
#include "ember/kl/expr.h"
#include "ember/kl/render.h"

namespace ember::kl {

/// A shape and the strides (elements) of each operand over it, inputs first.
struct PwLayout {
  std::vector<int64_t> extents;
  std::vector<std::vector<int64_t>> strides;
  int64_t numel() const;
};
/// Drops size-1 dims and merges neighbours that are contiguous in every operand (keeping at
/// least one dim). `strides[k]` has one entry per dim of `shape`.
PwLayout collapse(std::span<const int64_t> shape, const std::vector<std::vector<int64_t>>& strides);

/// What a pointwise kernel is specialised on.
struct PwKey {
  std::vector<DType> inputs, outputs, scalars;
  int rank = 1;
  std::vector<uint32_t> broadcast;  // per operand: bit d set when its stride in dim d is 0
  int lanes = 1;                    // > 1: the inner dim has stride 1 (or 0) in every operand
  bool restrict_ = true;            // false when an output may alias an input
  /// "pointwise r2 in[f32 f32:b0] out[f32] s[f32] v8"
  std::string str() const;
  bool operator==(const PwKey&) const = default;
};
/// The key for a layout: broadcast bits from zero strides, vectors when the inner dim allows.
PwKey pointwise_key(const PwLayout& l, std::vector<DType> inputs, std::vector<DType> outputs,
                    std::vector<DType> scalars, const Target& t);

/// Maps loaded inputs (dtypes of the key; vectors in the vector loop) and the scalar
/// parameters to the outputs (cast to the output dtypes if they differ).
using PwBody = std::function<std::vector<Expr>(std::span<const Expr> in, std::span<const Expr> scalars)>;
Kernel pointwise_kernel(const std::string& name, const PwKey& key, const PwBody& body);
/// A body that also sees the elements' positions: their row-major index in the shape (I64, as
/// many lanes as the loaded values), which collapsing leaves unchanged. A random op's element i
/// (dropout's mask) is drawn from its position.
using PwBodyAt = std::function<std::vector<Expr>(std::span<const Expr> in, std::span<const Expr> scalars,
                                                 const Expr& pos)>;
Kernel pointwise_kernel_at(const std::string& name, const PwKey& key, const PwBodyAt& body);

/// The argument pack: buffers (inputs then outputs, element pointers at each operand's first
/// element), the scalars, then the extents and the strides the key did not specialise.
ArgPack pointwise_args(const Kernel& k, const PwKey& key, const PwLayout& l,
                       std::span<const void* const> buffers, std::span<const Scalar> scalars);
/// Work items (elements) and a grain for the thread pool.
inline int64_t pointwise_items(const PwLayout& l) { return l.numel(); }
inline constexpr int64_t kPointwiseGrain = int64_t(1) << 15;
/// The grain for target t: on a GPU (plane_size > 1) a thread takes one vector's worth of
/// elements (16 bytes of the widest operand), so neighbouring threads read neighbouring chunks.
/// Vectors a GPU thread takes (EMBER_KL_PW_VECTORS, default 1; for comparisons).
int64_t pointwise_gpu_vectors();
inline int64_t pointwise_grain(const PwKey& key, const Target& t) {
  return t.plane_size > 1 ? key.lanes * pointwise_gpu_vectors() : kPointwiseGrain;
}

}  // namespace ember::kl

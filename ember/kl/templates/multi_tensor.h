#pragma once
// The multi-tensor template: one update body applied elementwise to a list of contiguous
// tensors of different sizes (optimizer steps such as AdamW: param, grad, exp_avg, exp_avg_sq),
// optionally also reducing a value per work item (gradient-norm partial sums). Each slot is a
// list buffer (an array of pointers, one per tensor), so one compiled kernel serves any number
// of tensors; hyper-parameters are scalar parameters, so it serves every step too.
//
// Work split: a work item is one chunk of one tensor (a table built on the host maps items to
// (tensor, offset, length)); inside it, vectors and a scalar tail. On a GPU target
// (plane_size > 1) a workgroup of `workgroup` threads takes one item, its threads striding
// through the chunk one vector apart (coalesced), partials summed by a plane reduction and
// shared memory. The plan's pointer arrays and table must then be in device memory.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ember/kl/abi.h"
#include "ember/kl/expr.h"
#include "ember/kl/render.h"

namespace ember::kl {

struct MultiTensorSlot {
  DType dtype = DType::F32;
  Access access = Access::ReadWrite;  // Read: an input; Write: an output; ReadWrite: updated
  bool operator==(const MultiTensorSlot&) const = default;
};
struct MultiTensorKey {
  std::vector<MultiTensorSlot> slots;
  std::vector<DType> scalars;
  DType partial = DType::Bool;  // Bool: no reduction; else the dtype of per-item partial sums
  int lanes = 1;
  int workgroup = 1;  // > 1: the GPU form (see above)
  std::string str() const;
  bool operator==(const MultiTensorKey&) const = default;
};
MultiTensorKey multi_tensor_key(std::vector<MultiTensorSlot> slots, std::vector<DType> scalars, DType partial,
                                const Target& t);

/// body(the readable slots' values, in slot order; scalars) -> the writable slots' new values in
/// slot order, then (when the key reduces) the value summed into the item's partial.
using MultiTensorBody = std::function<std::vector<Expr>(std::span<const Expr> in, std::span<const Expr> scalars)>;
Kernel multi_tensor_kernel(const std::string& name, const MultiTensorKey& key, const MultiTensorBody& body);

/// The host side of one tensor list: per slot the element pointers of every tensor, and the
/// work table (tensor, offset, length per item). Reusable while the tensors keep their storage.
struct MultiTensorPlan {
  std::vector<std::vector<const void*>> pointers;  // [slot][tensor]
  std::vector<int64_t> table;                      // 3 per work item
  int64_t items() const { return int64_t(table.size() / 3); }
};
/// Splits tensors of `numels` into chunks of at most `chunk` elements.
MultiTensorPlan multi_tensor_plan(std::span<const int64_t> numels, std::vector<std::vector<const void*>> pointers,
                                  int64_t chunk = int64_t(1) << 16);
/// Buffers: one list per slot, the table, then the partials (one per item) when reducing.
ArgPack multi_tensor_args(const Kernel& k, const MultiTensorKey& key, const MultiTensorPlan& plan,
                          std::span<const Scalar> scalars, void* partials = nullptr);

}  // namespace ember::kl

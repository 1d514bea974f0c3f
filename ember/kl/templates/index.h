#pragma once
// Gather and scatter templates, bounds checked: an index outside [0, size) (after wrapping
// negatives, where the op allows them) is never used to read or write; the kernel sets an error
// flag in a small int64 error buffer instead, which the runtime reads at sync (see
// index_error()). The gather output at such a position is 0.
//
// gather covers gather, index_select, take and embedding (the index tensor is viewed over the
// output's shape: zero strides where it does not vary); scatter covers scatter, scatter_add,
// scatter_reduce (include_self) and index_add (the index viewed over src's shape).
//
// Work split: gather: one output element per work item (rows of the innermost dim); scatter: one
// position of the index tensor outside the scattered dim per work item, walking that dim in
// order, so no two work items write the same output element.
#include <span>
#include <string>
#include <vector>

#include "ember/kl/abi.h"
#include "ember/kl/expr.h"

namespace ember::kl {

/// Slots of the error buffer: [0] = 1 when an index was out of range, [1] = such an index (of
/// the racing work items, one wins). Its bytes are cpu::jit::KernelStatus's layout (code =
/// kIndexOutOfRange = 1 at offset 0, little-endian; detail at 8), so the launcher's status word
/// can be passed as the buffer.
inline constexpr int kErrorSlots = 2;
/// Throws IndexError "[op] index 7 is out of bounds for dimension 0 with size 5" when the error
/// buffer of a gather/scatter kernel reports one.
void check_index_error(const char* op, const int64_t* err, int64_t dim, int64_t size);

struct GatherKey {
  DType src = DType::F32, index = DType::I64;
  int rank = 1, dim = 0;
  bool wrap_negative = false;  // take: -1 is the last element
  std::string str() const;
  bool operator==(const GatherKey&) const = default;
};
/// out[p] = src[p with dim replaced by index[p]]. Buffers: src, index, out, err (int64[2]).
Kernel gather_kernel(const std::string& name, const GatherKey& key);
/// Strides in elements, each over the output's shape (src's stride along `dim` is the step of
/// one index); `src_size` is src's extent along `dim`.
ArgPack gather_args(const Kernel& k, const GatherKey& key, std::span<const int64_t> out_shape,
                    std::span<const int64_t> src_strides, std::span<const int64_t> index_strides,
                    std::span<const int64_t> out_strides, int64_t src_size, const void* src,
                    const void* index, void* out, int64_t* err);
int64_t gather_items(std::span<const int64_t> out_shape);

enum class ScatterReduce : uint8_t { Assign, Sum, Prod, Max, Min };
struct ScatterKey {
  DType src = DType::F32, index = DType::I64, out = DType::F32;
  ScatterReduce reduce = ScatterReduce::Assign;
  int rank = 1, dim = 0;
  bool wrap_negative = false;
  std::string str() const;
  bool operator==(const ScatterKey&) const = default;
};
/// For p over the index's shape: out[p with dim replaced by index[p]] (reduce)= src[p], in
/// place on out (whose other elements are left alone). Buffers: src, index, out, err.
Kernel scatter_kernel(const std::string& name, const ScatterKey& key);
/// `shape` is the iteration shape (the index's); strides over it for src and index; out's own
/// strides; `out_size` its extent along `dim`.
ArgPack scatter_args(const Kernel& k, const ScatterKey& key, std::span<const int64_t> shape,
                     std::span<const int64_t> src_strides, std::span<const int64_t> index_strides,
                     std::span<const int64_t> out_strides, int64_t out_size, const void* src,
                     const void* index, void* out, int64_t* err);
int64_t scatter_items(const ScatterKey& key, std::span<const int64_t> shape);

}  // namespace ember::kl

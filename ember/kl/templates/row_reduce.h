#pragma once
// The row-reduce template: reductions along one (collapsed) dim, with a prologue (pointwise on
// the inputs before they are combined), several combiners, and an epilogue that either writes
// reduced-shape outputs (sum, mean, var, argmax, logsumexp) or broadcasts the reduced values
// back over the row and writes full-shape outputs (softmax, layer_norm, RMS norm).
//
// Work split: a work item is one row (Row mode: vectors along the row, a scalar tail, lanes
// combined at the end), or a block of `lanes` neighbouring rows (Col mode, when the reduced dim
// is not the contiguous one: each lane reduces its own row, so results do not depend on the
// vector width; a partial last block runs row by row).
//
// On a GPU target (Target::plane_size > 1) the Row mode is cooperative: `group` threads (a
// power of two, 32..1024) reduce one row together, each walking the row in strides of
// group * lanes, their states merged by plane shuffles and, across planes, through shared
// memory; a workgroup of `workgroup` threads takes workgroup / group neighbouring rows (so
// short rows share a block). The Col mode runs one thread per row (lanes = 1): neighbouring
// threads read neighbouring addresses.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ember/kl/abi.h"
#include "ember/kl/expr.h"
#include "ember/kl/render.h"

namespace ember::kl {

/// How values are combined. Max/Min propagate NaN; ArgMax/ArgMin keep the first index of the
/// extreme (NaN counts as the largest); Welford gives mean, M2 (sum of squared deviations) and
/// count; Softmax gives the max m and sum of exp(x - m) (the online-softmax pair).
enum class Combiner : uint8_t { Sum, Prod, Max, Min, Any, All, ArgMax, ArgMin, Welford, Softmax };
/// One reduction: its combiner and the dtype it accumulates in (the prologue's value is cast
/// to it; Any/All take bool).
struct Reduction {
  Combiner kind = Combiner::Sum;
  DType acc = DType::F32;
  bool operator==(const Reduction&) const = default;
};
/// Values a reduction hands the epilogue: 1, or 2 (ArgMax/ArgMin: value, int64 index;
/// Softmax: max, sum), or 3 (Welford: mean, M2, count).
int reduced_values(Combiner c);

/// Rows: the outer (kept) dims collapsed, the reduced dims collapsed into one of `row`
/// elements; strides per operand (inputs, then outputs) over both.
struct RowLayout {
  std::vector<int64_t> outer;
  int64_t row = 1;
  std::vector<std::vector<int64_t>> outer_strides;
  std::vector<int64_t> row_strides;
  int64_t rows() const;
};
/// `strides[k]` covers every dim of `shape` (a reduced-shape output has stride 0 along the
/// reduced dims). Throws ValueError when the reduced dims cannot be walked as one.
RowLayout row_layout(std::span<const int64_t> shape, const std::vector<std::vector<int64_t>>& strides,
                     std::span<const int64_t> reduce_dims);

struct RowReduceKey {
  std::vector<DType> inputs, outputs, scalars;
  int prologue_inputs = 0;  // the first ones are read while reducing; all are read after
  std::vector<Reduction> reductions;
  bool broadcast_back = false;  // outputs have the full shape (else the reduced shape)
  int outer_rank = 0;
  std::vector<uint32_t> broadcast;  // per operand: bit d: outer dim d has stride 0; bit 31: the row
  enum class Mode : uint8_t { Row, Col } mode = Mode::Row;
  int lanes = 1;
  bool gpu = false;   // the GPU forms (see above)
  int group = 1;      // GPU Row mode: threads per row
  int workgroup = 1;  // GPU Row mode: threads per workgroup (rows per workgroup = workgroup / group)
  bool status = false;  // a status word after the outputs, which the prologue may fail (below)
  int cached = 0;  // GPU Row mode, broadcast back: vectors per thread kept in registers (0: reread)
  std::string str() const;
  bool operator==(const RowReduceKey&) const = default;
};
RowReduceKey row_reduce_key(const RowLayout& l, std::vector<DType> inputs, int prologue_inputs,
                            std::vector<Reduction> reductions, std::vector<DType> outputs,
                            bool broadcast_back, std::vector<DType> scalars, const Target& t);

/// prologue(inputs read while reducing, scalars) -> one value per reduction.
using RowPrologue = std::function<std::vector<Expr>(std::span<const Expr> in, std::span<const Expr> scalars)>;
/// epilogue(reduced values, in order of the reductions; every input at this element in
/// broadcast-back mode, else none; scalars) -> the outputs. In broadcast-back mode an output
/// whose row stride is 0 is a per-row output: written once per row, with the epilogue's value at
/// the row's first element (cross-entropy's loss beside the log-probabilities it keeps).
using RowEpilogue = std::function<std::vector<Expr>(std::span<const Expr> reduced, std::span<const Expr> in,
                                                    std::span<const Expr> scalars)>;
Kernel row_reduce_kernel(const std::string& name, const RowReduceKey& key, const RowPrologue& prologue,
                         const RowEpilogue& epilogue);
/// A prologue that also sees the element's position along the row (I64, as many lanes as the
/// loaded values): a gather of one element per row, e.g. a loss's target class, is a Sum of
/// select(pos == index, x, 0), exact since every other term is zero. With `key.status` it
/// returns two more values, a Bool "failed" and its I64 detail (a bad target): where it is
/// true the kernel stores code 1 (kIndexOutOfRange) and the detail into the status word (the
/// buffer after the outputs: two int64, cpu::jit::KernelStatus's layout; racing items, one wins).
using RowPrologueAt = std::function<std::vector<Expr>(std::span<const Expr> in, std::span<const Expr> scalars,
                                                      const Expr& pos)>;
Kernel row_reduce_kernel_at(const std::string& name, const RowReduceKey& key, const RowPrologueAt& prologue,
                            const RowEpilogue& epilogue);

/// Buffers (inputs, outputs, then the status word when the key has one), scalars, then outer extents, row length and the strides the
/// key did not specialise.
ArgPack row_reduce_args(const Kernel& k, const RowReduceKey& key, const RowLayout& l,
                        std::span<const void* const> buffers, std::span<const Scalar> scalars);
/// Work items: rows (Row mode) or row blocks (Col mode).
int64_t row_reduce_items(const RowReduceKey& key, const RowLayout& l);
/// A grain of about 64k elements per task (GPU forms: the rows of one workgroup).
int64_t row_reduce_grain(const RowReduceKey& key, const RowLayout& l);

}  // namespace ember::kl

#pragma once
// The scan template: inclusive cumulative sum/product/max/min along one dim (cumsum, cumprod,
// cummax, cummin), accumulated sequentially in the accumulator dtype and rounded to the output
// dtype at every step, as flex does, so results match it bit for bit.
//
// Work split: a work item is one line along the scanned dim (Line mode), or a block of `lanes`
// neighbouring lines when the scanned dim is not the contiguous one (Col mode: one line per
// lane, a partial last block line by line).
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ember/kl/templates/row_reduce.h"

namespace ember::kl {

enum class ScanOp : uint8_t { Sum, Prod, Max, Min };

struct ScanKey {
  DType input = DType::F32, acc = DType::F32, output = DType::F32;
  ScanOp op = ScanOp::Sum;
  bool indices = false;  // Max/Min: also write the int64 index of the running extreme
  int outer_rank = 0;
  uint32_t input_broadcast = 0;  // bit d: the input's stride along outer dim d is 0
  RowReduceKey::Mode mode = RowReduceKey::Mode::Row;  // Row = one line per work item
  int lanes = 1;
  std::string str() const;
  bool operator==(const ScanKey&) const = default;
};
/// The layout is row_layout(shape, {input, output[, indices]} strides, {dim}).
ScanKey scan_key(const RowLayout& l, DType input, DType acc, DType output, ScanOp op, bool indices,
                 const Target& t);

/// Maps the loaded input to the value accumulated (default: a cast to the accumulator dtype);
/// for Max/Min it maps to the value compared and written (default: the input itself).
using ScanPrologue = std::function<Expr(const Expr& x)>;
Kernel scan_kernel(const std::string& name, const ScanKey& key, const ScanPrologue& prologue = {});

/// Buffers: input, output[, indices]; then outer extents, line length, strides.
ArgPack scan_args(const Kernel& k, const ScanKey& key, const RowLayout& l, std::span<const void* const> buffers);
int64_t scan_items(const ScanKey& key, const RowLayout& l);
int64_t scan_grain(const ScanKey& key, const RowLayout& l);

}  // namespace ember::kl

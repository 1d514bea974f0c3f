#pragma once
// Index arithmetic shared by the templates (private to ember/kl/templates).
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "ember/kl/expr.h"
#include "ember/kl/templates/row_reduce.h"

namespace ember::kl {

/// Splits `linear` over `ext` (row-major) and returns, per operand k, the sum of index_d *
/// strides[k][d] over the dims of `ext` (an invalid stride Expr is a broadcast: skipped).
inline std::vector<Expr> row_offsets(const Expr& linear, std::span<const Expr> ext,
                                     const std::vector<std::vector<Expr>>& strides) {
  std::vector<Expr> off(strides.size(), Expr(0));
  Expr rest = linear;
  for (size_t d = ext.size(); d-- > 0;) {
    const bool last = d == 0;
    const Expr idx = last ? rest : rest % ext[d];
    if (!last) rest = rest / ext[d];
    for (size_t k = 0; k < strides.size(); ++k)
      if (strides[k][d].valid()) off[k] = off[k] + idx * strides[k][d];
  }
  for (Expr& o : off)
    if (o.weak()) o = cast(o, DType::I64);
  return off;
}

/// Work items of a row template (row-reduce, scan) over `l`: rows (Row mode), or blocks of
/// `lanes` neighbouring rows (Col mode).
inline int64_t row_template_items(RowReduceKey::Mode mode, int lanes, const RowLayout& l) {
  if (mode == RowReduceKey::Mode::Row) return l.rows();
  const int64_t inner = l.outer.back();
  return l.rows() / inner * ((inner + lanes - 1) / lanes);
}
/// A grain of about `elements` elements per task for a row template.
inline int64_t row_template_grain(RowReduceKey::Mode mode, int lanes, const RowLayout& l,
                                  int64_t elements) {
  const int64_t per_item =
      std::max<int64_t>(1, l.row * (mode == RowReduceKey::Mode::Col ? lanes : 1));
  return std::max<int64_t>(1, elements / per_item);
}

}  // namespace ember::kl

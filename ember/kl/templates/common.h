#pragma once
// Index arithmetic shared by the templates (private to ember/kl/templates).
#include <span>
#include <vector>

#include "ember/kl/expr.h"

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

}  // namespace ember::kl

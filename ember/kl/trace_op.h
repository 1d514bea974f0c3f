#pragma once
// Tracing elementwise registry ops into IR: what the fusion layer calls for each node of a
// pointwise group (inside a template's body callback). The definitions are kl/elementwise_ops.h.
#include <cstdint>
#include <span>
#include <vector>

#include "ember/kl/expr.h"
#include "ember/ops/registry.h"

namespace ember::kl {

/// Whether `op` is in the elementwise table (the Unary, Binary and Ternary categories).
bool is_elementwise(OpId op);
/// Tensor operands `op` takes (clamp: 3, of which min and max may be absent).
int ew_inputs(OpId op);

/// The dtype `op`'s operands are converted to before its definition runs: `meta.compute` for
/// binary and ternary ops, the input's dtype for cast and the predicates (isnan, logical_not,
/// ...), the output's dtype for the other unary ops. `in` are the operand dtypes.
DType compute_dtype(OpId op, std::span<const DType> in, const MetaList& meta);
/// The dtype the definition is evaluated in: `compute`, except f16/bf16 which evaluate in f32
/// (rounded to the output dtype afterwards, as flex does).
inline DType eval_dtype(DType compute) {
  return compute == DType::F16 || compute == DType::BF16 ? DType::F32 : compute;
}

/// The numeric attributes `op` reads, in the order pointwise() takes them, resolved for
/// `compute` (nan_to_num's default posinf/neginf are the dtype's largest finite values). The
/// fusion layer makes each one a scalar kernel parameter of dtype eval_dtype(compute), so one
/// compiled kernel serves every value; without parameters pointwise() bakes them in.
std::vector<Scalar> op_scalars(OpId op, const Attrs& a, DType compute);
/// The attributes that change the traced code, as a small number for kernel keys: gelu's
/// approximation (1 = tanh), div's rounding mode (1 = trunc, 2 = floor), cast's target dtype.
uint32_t static_attrs(OpId op, const Attrs& a);

/// Traces one elementwise op: `in` are its tensor operands as traced values of any dtype (an
/// invalid Expr for an absent clamp bound), `scalars` its op_scalars as traced values (or empty
/// to bake in the attribute values), `compute` from compute_dtype() and `out` the output dtype
/// (from inference). Returns a value of dtype `out` with the lanes of the widest operand.
Expr pointwise(OpId op, const Attrs& a, std::span<const Expr> in, std::span<const Expr> scalars,
               DType compute, DType out);

}  // namespace ember::kl

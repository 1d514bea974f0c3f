#pragma once
// Matrix products.
#include <string>

#include "ember/tensor.h"

namespace ember {

// Operands of mm/bmm/matmul/linear/dot share one numeric dtype (DTypeError otherwise, as in
// torch); f16/bf16 compute in f32, integers wrap.

/// 2-D x 2-D.
Tensor mm(const Tensor& a, const Tensor& b);
/// [B,n,k] x [B,k,m].
Tensor bmm(const Tensor& a, const Tensor& b);
/// torch.matmul: 1-D to N-D with batch broadcasting (a 1-D operand gains a unit dim that the
/// result drops again).
Tensor matmul(const Tensor& a, const Tensor& b);
/// x @ w^T + b (bias optional: pass an undefined Tensor).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = {});
/// a[i] * b[j] for 1-D a and b (dtypes promote like mul).
Tensor outer(const Tensor& a, const Tensor& b);
/// Inner product of two 1-D tensors of one length (0-d result).
Tensor dot(const Tensor& a, const Tensor& b);
/// Einstein summation, e.g. einsum("bij,bjk->bik", {a, b}). Without "->" the output holds the
/// '...' dims, then the subscripts used once, in alphabetical order; a repeated subscript takes a
/// diagonal; '...' dims broadcast. The result keeps the operands' (common) dtype.
Tensor einsum(const std::string& equation, const TensorList& operands);

}  // namespace ember

#pragma once
// Matrix products.
#include <string>

#include "ember/tensor.h"

namespace ember {

/// 2-D x 2-D.
Tensor mm(const Tensor& a, const Tensor& b);
/// [B,n,k] x [B,k,m].
Tensor bmm(const Tensor& a, const Tensor& b);
/// torch.matmul: 1-D to N-D with batch broadcasting.
Tensor matmul(const Tensor& a, const Tensor& b);
/// x @ w^T + b (bias optional: pass an undefined Tensor).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = {});
Tensor outer(const Tensor& a, const Tensor& b);
Tensor dot(const Tensor& a, const Tensor& b);
/// Einstein summation, e.g. einsum("bij,bjk->bik", {a, b}).
Tensor einsum(const std::string& equation, const TensorList& operands);

}  // namespace ember

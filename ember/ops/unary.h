#pragma once
// Elementwise unary maths and activations. Float ops on integer inputs return the default dtype.
#include "ember/tensor.h"

namespace ember {

/// Converts to `dtype` (float -> int truncates toward zero, like torch).
Tensor cast(const Tensor& x, DType dtype);

#define EMBER_UNARY_DECL(name) Tensor name(const Tensor& x);
EMBER_UNARY_DECL(neg) EMBER_UNARY_DECL(abs) EMBER_UNARY_DECL(sign) EMBER_UNARY_DECL(exp)
EMBER_UNARY_DECL(exp2) EMBER_UNARY_DECL(expm1) EMBER_UNARY_DECL(log) EMBER_UNARY_DECL(log2)
EMBER_UNARY_DECL(log10) EMBER_UNARY_DECL(log1p) EMBER_UNARY_DECL(sqrt) EMBER_UNARY_DECL(rsqrt)
EMBER_UNARY_DECL(square) EMBER_UNARY_DECL(reciprocal) EMBER_UNARY_DECL(sin) EMBER_UNARY_DECL(cos)
EMBER_UNARY_DECL(tan) EMBER_UNARY_DECL(asin) EMBER_UNARY_DECL(acos) EMBER_UNARY_DECL(atan)
EMBER_UNARY_DECL(sinh) EMBER_UNARY_DECL(cosh) EMBER_UNARY_DECL(tanh) EMBER_UNARY_DECL(asinh)
EMBER_UNARY_DECL(acosh) EMBER_UNARY_DECL(atanh) EMBER_UNARY_DECL(erf) EMBER_UNARY_DECL(erfinv)
EMBER_UNARY_DECL(floor) EMBER_UNARY_DECL(ceil) EMBER_UNARY_DECL(round) EMBER_UNARY_DECL(trunc)
EMBER_UNARY_DECL(sigmoid) EMBER_UNARY_DECL(relu) EMBER_UNARY_DECL(silu) EMBER_UNARY_DECL(mish)
EMBER_UNARY_DECL(hardswish) EMBER_UNARY_DECL(hardsigmoid) EMBER_UNARY_DECL(logical_not)
EMBER_UNARY_DECL(bitwise_not) EMBER_UNARY_DECL(isnan) EMBER_UNARY_DECL(isinf)
EMBER_UNARY_DECL(isfinite)
#undef EMBER_UNARY_DECL

/// approximate: "none" (exact, erf) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
/// Replaces NaN with `nan`, +inf/-inf with posinf/neginf (default: the dtype's max/lowest).
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = {},
                  std::optional<double> neginf = {});

}  // namespace ember

#pragma once
// Broadcasting binary and ternary ops, with PyTorch's type promotion (a Scalar is a weak type).
#include <optional>
#include <string>

#include "ember/tensor.h"

namespace ember {

#define EMBER_BINARY_DECL(name)                  \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, Scalar b);        \
  Tensor name(Scalar a, const Tensor& b);
EMBER_BINARY_DECL(add) EMBER_BINARY_DECL(sub) EMBER_BINARY_DECL(mul) EMBER_BINARY_DECL(div)
EMBER_BINARY_DECL(remainder) EMBER_BINARY_DECL(fmod) EMBER_BINARY_DECL(pow)
EMBER_BINARY_DECL(atan2) EMBER_BINARY_DECL(maximum) EMBER_BINARY_DECL(minimum)
EMBER_BINARY_DECL(eq) EMBER_BINARY_DECL(ne) EMBER_BINARY_DECL(lt) EMBER_BINARY_DECL(le)
EMBER_BINARY_DECL(gt) EMBER_BINARY_DECL(ge) EMBER_BINARY_DECL(logical_and)
EMBER_BINARY_DECL(logical_or) EMBER_BINARY_DECL(logical_xor) EMBER_BINARY_DECL(bitwise_and)
EMBER_BINARY_DECL(bitwise_or) EMBER_BINARY_DECL(bitwise_xor)
EMBER_BINARY_DECL(bitwise_left_shift) EMBER_BINARY_DECL(bitwise_right_shift)
#undef EMBER_BINARY_DECL

/// a + alpha * b
Tensor add(const Tensor& a, const Tensor& b, Scalar alpha);
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha);
/// rounding_mode: "" (true division), "floor" or "trunc".
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode);
Tensor floor_divide(const Tensor& a, const Tensor& b);

/// cond ? a : b, broadcasting all three.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, Scalar b);
Tensor where(const Tensor& cond, Scalar a, const Tensor& b);
/// min(max(x, lo), hi); either bound may be absent.
Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi);
Tensor clamp(const Tensor& x, const Tensor& lo, const Tensor& hi);
/// a + w * (b - a)
Tensor lerp(const Tensor& a, const Tensor& b, Scalar w);
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w);
/// x + value * t1 * t2
Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value = 1);
/// x + value * t1 / t2
Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, Scalar value = 1);

/// The dtype `a op b` computes in (torch.result_type).
DType result_type(const Tensor& a, const Tensor& b);

// Operators, each with tensor and number operands; a number is a weak type (int_tensor * 2
// stays integer). Compound assignments (+=, <<=, ...) are Tensor members: they write in place.
// X(symbol, op)
#define EMBER_TENSOR_OPERATORS(X)                                                           \
  X(+, add) X(-, sub) X(*, mul) X(/, div) X(%, remainder) X(==, eq) X(!=, ne) X(<, lt)      \
  X(<=, le) X(>, gt) X(>=, ge) X(&, bitwise_and) X(|, bitwise_or) X(^, bitwise_xor)         \
  X(<<, bitwise_left_shift) X(>>, bitwise_right_shift)
#define EMBER_X(sym, op)                                 \
  Tensor operator sym(const Tensor& a, const Tensor& b); \
  Tensor operator sym(const Tensor& a, Scalar b);        \
  Tensor operator sym(Scalar a, const Tensor& b);
EMBER_TENSOR_OPERATORS(EMBER_X)
#undef EMBER_X
Tensor operator-(const Tensor& a);
Tensor operator~(const Tensor& a);

/// |a - b| <= atol + rtol * |b| elementwise, NaNs equal when equal_nan; shapes must broadcast.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
/// Same shape, dtype and elements.
bool equal(const Tensor& a, const Tensor& b);

}  // namespace ember

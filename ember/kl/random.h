#pragma once
// Counter-based random numbers in kernel IR: ember/detail/philox.h's Philox4x32-10 written in kl
// ops, so a generated kernel draws exactly what ember's eager random kernels draw (element i of
// a random op is a pure function of the op's seed, its counter offset and i) on every target.
// IR has no unsigned 32-bit type: a word is an I64 holding a value in [0, 2^32), and the 32x32
// -> 64-bit products (mulhi/mullo) are I64 products of two such words (their bits are those of
// the unsigned product: integer Mul wraps), split by a shift and a mask.
#include <array>

#include "ember/kl/expr.h"

namespace ember::kl {

/// The four words of philox4x32 for element `index` (I64, scalar or vector) of the op drawn at
/// (`seed`, `offset`) (I64 values holding the u64 bits); each an I64 in [0, 2^32).
std::array<Expr, 4> philox4x32(const Expr& seed, const Expr& offset, const Expr& index);
/// bernoulli's draw at element `index`: u01d(r[0], r[1]) < p (an F64 probability), as bool;
/// ember::flex's bernoulli kernel keeps an element exactly when this is true.
Expr bernoulli_keep(const Expr& seed, const Expr& offset, const Expr& index, const Expr& p);

}  // namespace ember::kl

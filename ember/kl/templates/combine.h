#pragma once
// Combiners of the reduce and scan templates: identities, per-element updates, merges of two
// partial states and the values handed to epilogues (private to ember/kl/templates).
#include <vector>

#include "ember/kl/expr.h"
#include "ember/kl/templates/row_reduce.h"

namespace ember::kl {

/// The state of one reduction: 1-3 values (see reduced_values).
using State = std::vector<Expr>;

/// The identity state of `r` with `lanes` lanes.
State combine_identity(const Reduction& r, int lanes);
/// The state after seeing x (of r.acc, cast if needed) at index idx (int64, ArgMax/ArgMin).
State combine_update(const Reduction& r, const State& s, const Expr& x, const Expr& idx);
/// Two partial states merged (order-independent but for floating-point rounding).
State combine_merge(const Reduction& r, const State& a, const State& b);
/// The lanes of a vector state merged pairwise into a scalar state.
State combine_lanes(const Reduction& r, const State& s);
/// Lowest and highest values of a dtype (-inf/+inf for floats).
Expr lowest(Type t);
Expr highest(Type t);

}  // namespace ember::kl

#pragma once
// Helpers for VJP rules (private to the autodiff library). Rules are written in ember ops.
#include "ember/ember.h"
#include "ember/ops/registry.h"

namespace ember::autodiff {

/// Sums a broadcast gradient back down to `shape` (the inverse of broadcasting).
Tensor sum_to(const Tensor& grad, const Shape& shape);
/// Zeros shaped and typed like t.
Tensor zeros_for(const Tensor& t);
/// Registers `fn` as op's rule.
inline void set_vjp(OpId op, VjpFn fn) { op_def_mut(op).vjp = fn; }

// One registration function per family of rules (called once from ember::detail::init).
void register_rules_elementwise();  // unary, binary, ternary, cast
void register_rules_shape();        // views, layout, indexing
void register_rules_reduce();       // reductions, scans, sort
void register_rules_nn();           // linalg, conv, pooling, nn functional kernels

}  // namespace ember::autodiff

#pragma once
// Pieces shared by the elementwise VJP rules (rules_elementwise*.cpp); private to autodiff.
#include "ember/autodiff/rules.h"

namespace ember::autodiff {

/// Input i is floating and asked for a gradient (integer, bool and mask inputs never get one).
inline bool wants(const VjpCtx& c, size_t i) {
  return c.needs_grad(i) && c.input(i).defined() && is_floating(c.input(i).dtype());
}
/// `g`, computed at the broadcast output, as `x`'s gradient: summed back to x's shape and cast
/// to x's dtype; undefined when g is or when x is not floating.
Tensor grad_for(const Tensor& g, const Tensor& x);
/// Input i as the forward kernel saw it: a wrapped Scalar operand becomes a plain 0-d tensor of
/// dtype `d`, the op's compute dtype (ops between two wrapped numbers compute in the default
/// dtype, which would round an f64 scalar); other inputs are returned as they are.
Tensor operand(const VjpCtx& c, size_t i, DType d);

void register_rules_unary();    // rules_elementwise.cpp
void register_rules_binary();   // rules_elementwise_binary.cpp
void register_rules_ternary();  // rules_elementwise_ternary.cpp

}  // namespace ember::autodiff

#pragma once
// Helpers shared by the shape-family rules (rules_shape*.cpp; private).
#include "ember/autodiff/rules.h"

namespace ember::autodiff::shape_rules {

/// Input i takes a gradient: it was asked for and the input is floating or complex.
inline bool wants(const VjpCtx& c, size_t i) {
  return c.needs_grad(i) && i < c.inputs.size() && c.input(i).defined() &&
         is_differentiable(c.input(i).dtype());
}
/// g in x's dtype (rules may compute in the output's dtype, e.g. after type promotion).
inline Tensor like(const Tensor& g, const Tensor& x) { return g.to(x.dtype()); }
/// Zeros of `shape`, typed and placed like g.
inline Tensor zeros_as(const Shape& shape, const Tensor& g) {
  return zeros(shape, {g.dtype(), g.device()});
}
/// g (covering the leading `len` positions of every dim) zero-padded at the end of each dim up
/// to `shape`: gradients of a src larger than its index (scatter family), and 0-d/[1] mismatches.
Tensor fit_to(const Tensor& g, const Shape& shape);
/// The leading block of x with `shape` (every dim of x at least as large).
Tensor crop_to(const Tensor& x, const Shape& shape);
/// Zeros of `shape` with g written along dim at start, start + step, ... (the adjoint of slicing).
Tensor embed(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t step);

void register_views();
void register_layout();
void register_index();
void register_index_put();

}  // namespace ember::autodiff::shape_rules

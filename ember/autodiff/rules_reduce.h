#pragma once
// Helpers shared by the reduction and scan/sort rules (private to rules_reduce*.cpp).
#include "ember/autodiff/rules.h"

namespace ember::autodiff {

/// g cast to x's dtype (a rule may compute in the output dtype, e.g. sum(dtype=...)).
inline Tensor fit_to(const Tensor& g, const Tensor& x) {
  return g.dtype() == x.dtype() ? g : g.to(x.dtype());
}
/// g, reduced over the (wrapped) `dims` of x, reshaped so that it broadcasts against x.
Tensor unreduce(const Tensor& g, const Tensor& x, const Shape& dims, bool keepdim);
/// Gradient of an op that picks one element per lane along `dim` (max/min/kthvalue/median with a
/// dim, sort, topk): zeros shaped like x with g scattered back at `indices`.
Tensor select_backward(const Tensor& g, const Tensor& indices, const Tensor& x, int64_t dim,
                       bool keepdim);
/// Gradient of a whole-tensor max/min/median: g split evenly among the elements equal to the
/// result (or among the NaNs when the result is NaN), as torch's evenly_distribute_backward.
Tensor evenly_distribute(const Tensor& g, const Tensor& x, const Tensor& result);

/// Registers the scan, sort and order-statistic rules (rules_reduce_scan.cpp).
void register_rules_reduce_scan();

}  // namespace ember::autodiff

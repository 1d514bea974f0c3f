#pragma once
// Gradient clipping on a Gradients object (in place: the held gradients are replaced).
#include <limits>
#include <vector>

#include "ember/autodiff.h"
#include "ember/tensor.h"

namespace ember::optim {

/// Scales the gradients of `params` held in `grads` so their total `norm_type`-norm (the norm
/// of the per-parameter norms; infinity for the max-abs norm) is at most `max_norm`; returns
/// the total norm before clipping. Parameters without a gradient are left out.
double clip_grad_norm(Gradients& grads, const std::vector<Tensor>& params, double max_norm,
                      double norm_type = 2);
/// Clamps every gradient of `params` held in `grads` to [-clip_value, clip_value].
void clip_grad_value(Gradients& grads, const std::vector<Tensor>& params, double clip_value);

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

}  // namespace ember::optim

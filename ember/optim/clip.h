#pragma once
// Gradient clipping on a Gradients object (in place: the held gradients are replaced), or, as
// torch::nn::utils does, on the gradients held in the parameters' grad() slots.
#include <limits>
#include <vector>

#include "ember/autodiff.h"
#include "ember/tensor.h"

namespace ember::optim {

/// Scales the gradients of `params` held in `grads` so their total `norm_type`-norm (the norm
/// of the per-parameter norms; infinity for the max-abs norm) is at most `max_norm`; returns
/// the total norm before clipping (reading it is a host sync: see clip_grad_norm_on_device).
/// Parameters without a gradient are left out.
double clip_grad_norm(Gradients& grads, const std::vector<Tensor>& params, double max_norm,
                      double norm_type = 2);
/// clip_grad_norm without a host sync: the scale is computed and applied on the device and the
/// total norm comes back as a 0-d float64 tensor (undefined when no parameter has a gradient).
Tensor clip_grad_norm_on_device(Gradients& grads, const std::vector<Tensor>& params,
                                double max_norm, double norm_type = 2);
/// Clamps every gradient of `params` held in `grads` to [-clip_value, clip_value].
void clip_grad_value(Gradients& grads, const std::vector<Tensor>& params, double clip_value);

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

}  // namespace ember::optim

namespace ember::nn::utils {
/// torch::nn::utils::clip_grad_norm_: optim::clip_grad_norm on the parameters' grad() slots
/// (what backward() accumulated), which it replaces; returns the total norm before clipping.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2);
/// torch::nn::utils::clip_grad_value_: clamps every grad() slot of `params` to [-v, v].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);
}  // namespace ember::nn::utils

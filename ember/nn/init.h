#pragma once
// ember::nn::init — PyTorch's parameter initialisers, drawing from ember's seeded generator
// (manual_seed). Each fills its argument in place without recording history.
#include <string>

#include "ember/tensor.h"

namespace ember::nn::init {

/// fan_in and fan_out of a weight [out, in, k...] as PyTorch computes them.
int64_t fan_in(const Tensor& w);
int64_t fan_out(const Tensor& w);
/// 1/sqrt(fan_in): the bound of PyTorch's default bias (and of kaiming_uniform with a=sqrt(5)).
double fan_in_bound(const Tensor& w);
/// The recommended gain for a nonlinearity ("linear", "relu", "leaky_relu", "tanh", "sigmoid").
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

Tensor& uniform_(Tensor& t, double lo = 0, double hi = 1);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
Tensor& constant_(Tensor& t, double v);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
/// Uniform(-b, b), b = gain * sqrt(3 / fan_in), gain for leaky_relu(a) (PyTorch's defaults).
Tensor& kaiming_uniform_(Tensor& t, double a = 0, const std::string& nonlinearity = "leaky_relu");
Tensor& kaiming_normal_(Tensor& t, double a = 0, const std::string& nonlinearity = "leaky_relu");
Tensor& xavier_uniform_(Tensor& t, double gain = 1);
Tensor& xavier_normal_(Tensor& t, double gain = 1);

}  // namespace ember::nn::init

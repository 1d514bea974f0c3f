#pragma once
// Creation and random ops. Options default to the default dtype/device.
#include <cstdint>
#include <optional>
#include <vector>

#include "ember/tensor.h"

namespace ember {

/// dtype/device for creation ops; empty fields mean "the default".
struct TensorOptions {
  std::optional<DType> dtype;
  std::optional<Device> device;
};

Tensor empty(const Shape& shape, TensorOptions o = {});
Tensor zeros(const Shape& shape, TensorOptions o = {});
Tensor ones(const Shape& shape, TensorOptions o = {});
/// A tensor filled with `value` (dtype defaults to the value's: bool, int64 or the default float).
Tensor full(const Shape& shape, Scalar value, TensorOptions o = {});
/// [start, end) with `step`; integer arguments give int64 unless a dtype is given.
Tensor arange(Scalar end, TensorOptions o = {});
Tensor arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions o = {});
/// `steps` evenly spaced values from start to end inclusive.
Tensor linspace(double start, double end, int64_t steps, TensorOptions o = {});
/// Identity matrix n x m (m defaults to n).
Tensor eye(int64_t n, std::optional<int64_t> m = {}, TensorOptions o = {});
Tensor empty_like(const Tensor& t, TensorOptions o = {});
Tensor zeros_like(const Tensor& t, TensorOptions o = {});
Tensor ones_like(const Tensor& t, TensorOptions o = {});
Tensor full_like(const Tensor& t, Scalar value, TensorOptions o = {});

// --- random: counter-based (Philox) per-device generators; same seed, same numbers ---
/// Seeds the generator of every device (and the default one).
void manual_seed(uint64_t seed);
/// Seeds the generator of one device.
void manual_seed(Device d, uint64_t seed);
/// Every generator's state (seed and counter of each device), for checkpoints.
std::vector<uint64_t> get_rng_state();
/// Restores get_rng_state(); throws ValueError when `state` has the wrong length.
void set_rng_state(const std::vector<uint64_t>& state);
/// Uniform [0, 1).
Tensor rand(const Shape& shape, TensorOptions o = {});
/// Standard normal.
Tensor randn(const Shape& shape, TensorOptions o = {});
/// Integers uniform in [low, high); int64 unless a dtype is given.
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions o = {});
/// 1 with probability p (elementwise from the tensor `p`), else 0; same dtype as p.
Tensor bernoulli(const Tensor& p);
Tensor bernoulli(const Tensor& like, double p);
/// Normal(mean, std) of the given shape.
Tensor normal(double mean, double std, const Shape& shape, TensorOptions o = {});
/// Uniform [low, high) of the given shape.
Tensor uniform(double low, double high, const Shape& shape, TensorOptions o = {});
Tensor rand_like(const Tensor& t, TensorOptions o = {});
Tensor randn_like(const Tensor& t, TensorOptions o = {});

}  // namespace ember

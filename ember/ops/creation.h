#pragma once
// Creation and random ops. Options default to the default dtype/device.
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <memory>

#include "ember/tensor.h"

namespace ember {

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

// libtorch's shorthands: a dtype or a device where the options go (zeros({2, 3}, kF64),
// ones({2}, Device::cpu())). Templates, so that a braced `{kI32}` or `{}` still means options.
template <class O>
concept DTypeOrDevice =
    std::is_same_v<O, DType> || std::is_same_v<O, Device> || std::is_same_v<O, DeviceType>;
inline TensorOptions options_of(DType d) { return {d, {}, {}}; }
inline TensorOptions options_of(Device d) { return {{}, d, {}}; }
inline TensorOptions options_of(DeviceType d) { return {{}, Device(d), {}}; }
template <DTypeOrDevice O> Tensor empty(const Shape& s, O o) { return empty(s, options_of(o)); }
template <DTypeOrDevice O> Tensor zeros(const Shape& s, O o) { return zeros(s, options_of(o)); }
template <DTypeOrDevice O> Tensor ones(const Shape& s, O o) { return ones(s, options_of(o)); }
template <DTypeOrDevice O> Tensor full(const Shape& s, Scalar v, O o) {
  return full(s, v, options_of(o));
}
template <DTypeOrDevice O> Tensor arange(Scalar end, O o) { return arange(end, options_of(o)); }
template <DTypeOrDevice O> Tensor arange(Scalar start, Scalar end, O o) {
  return arange(start, end, 1, options_of(o));
}
template <DTypeOrDevice O> Tensor arange(Scalar start, Scalar end, Scalar step, O o) {
  return arange(start, end, step, options_of(o));
}
template <DTypeOrDevice O> Tensor linspace(double start, double end, int64_t steps, O o) {
  return linspace(start, end, steps, options_of(o));
}
template <DTypeOrDevice O> Tensor eye(int64_t n, O o) { return eye(n, {}, options_of(o)); }
template <DTypeOrDevice O> Tensor empty_like(const Tensor& t, O o) {
  return empty_like(t, options_of(o));
}
template <DTypeOrDevice O> Tensor zeros_like(const Tensor& t, O o) {
  return zeros_like(t, options_of(o));
}
template <DTypeOrDevice O> Tensor ones_like(const Tensor& t, O o) {
  return ones_like(t, options_of(o));
}
template <DTypeOrDevice O> Tensor full_like(const Tensor& t, Scalar v, O o) {
  return full_like(t, v, options_of(o));
}

template <DTypeOrDevice O> Tensor rand(const Shape& s, O o);
template <DTypeOrDevice O> Tensor randn(const Shape& s, O o);
template <DTypeOrDevice O> Tensor randint(int64_t low, int64_t high, const Shape& s, O o);
template <DTypeOrDevice O> Tensor randint(int64_t high, const Shape& s, O o);

/// A random stream of its own (torch::Generator): random ops and DataLoader shuffling that are
/// given one draw from it, leaving the global generators (manual_seed) untouched. Copies share
/// one stream, like libtorch's; Generator(seed) gives the same numbers as manual_seed(seed).
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull);
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const;
  /// (seed, counter), for checkpoints; set_state restores it.
  std::vector<uint64_t> get_state() const;
  void set_state(const std::vector<uint64_t>& state);
  /// Reserves one op's worth of counters: (seed, counter offset) for the op's Philox draw.
  std::pair<uint64_t, uint64_t> next() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

Tensor rand(const Shape& shape, const Generator& gen, TensorOptions o = {});
Tensor randn(const Shape& shape, const Generator& gen, TensorOptions o = {});
Tensor randint(int64_t low, int64_t high, const Shape& shape, const Generator& gen,
               TensorOptions o = {});
Tensor randint(int64_t high, const Shape& shape, const Generator& gen, TensorOptions o = {});
Tensor normal(double mean, double std, const Shape& shape, const Generator& gen,
              TensorOptions o = {});
Tensor uniform(double low, double high, const Shape& shape, const Generator& gen,
               TensorOptions o = {});
Tensor bernoulli(const Tensor& p, const Generator& gen);
/// `num_samples` category indices (int64) drawn from the weights along the last dim of `probs`
/// (1-D [K] or 2-D [N, K], non-negative, not necessarily normalised), without replacement
/// (each index at most once; num_samples <= K) unless `replacement`: torch.multinomial.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false);
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement,
                   const Generator& gen);
/// A random permutation of [0, n), int64.
Tensor randperm(int64_t n, TensorOptions o = {});
Tensor randperm(int64_t n, const Generator& gen, TensorOptions o = {});

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
/// randint(0, high, shape).
Tensor randint(int64_t high, const Shape& shape, TensorOptions o = {});
/// 1 with probability p (elementwise from the tensor `p`), else 0; same dtype as p.
Tensor bernoulli(const Tensor& p);
Tensor bernoulli(const Tensor& like, double p);
/// Normal(mean, std) of the given shape.
Tensor normal(double mean, double std, const Shape& shape, TensorOptions o = {});
/// Uniform [low, high) of the given shape.
Tensor uniform(double low, double high, const Shape& shape, TensorOptions o = {});
Tensor rand_like(const Tensor& t, TensorOptions o = {});
Tensor randn_like(const Tensor& t, TensorOptions o = {});

template <DTypeOrDevice O> Tensor rand(const Shape& s, O o) { return rand(s, options_of(o)); }
template <DTypeOrDevice O> Tensor randn(const Shape& s, O o) { return randn(s, options_of(o)); }
template <DTypeOrDevice O> Tensor randint(int64_t low, int64_t high, const Shape& s, O o) {
  return randint(low, high, s, options_of(o));
}
template <DTypeOrDevice O> Tensor randint(int64_t high, const Shape& s, O o) {
  return randint(high, s, options_of(o));
}

}  // namespace ember

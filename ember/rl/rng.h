#pragma once
// rl::Rng — the small seeded generator of environments, spaces and buffers: splitmix64 (Steele,
// Lea and Flood, "Fast splittable pseudorandom number generators"). Cheap to copy and to save
// (one word), and simple enough that tests/gen/gen_rl_traces.py draws the same numbers in Python.
#include <cmath>
#include <cstdint>

namespace ember::rl {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : state_(seed) {}
  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) from 53 bits.
  double uniform() { return double(next_u64() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n) (n > 0; the bias below 2^-40 for n < 2^24 is ignored).
  int64_t integer(int64_t n) { return int64_t(uniform() * double(n)); }
  /// Standard normal (Box-Muller; one value per call).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(6.283185307179586 * u2);
  }
  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

 private:
  uint64_t state_;
};

}  // namespace ember::rl

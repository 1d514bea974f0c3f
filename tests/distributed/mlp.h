#pragma once
// A small MLP and data for the distributed tests: every rank builds the same global batch.
#include <ember/ember.h>
#include <ember/distributed.h>

namespace ember::test {

struct Mlp : nn::Module {
  nn::Linear fc1, fc2, head_b, never;
  explicit Mlp(DType d = DType::F64)
      : fc1({.in = 4, .out = 8, .param = {.dtype = d, .device = Device::flex()}}),
        fc2({.in = 8, .out = 3, .param = {.dtype = d, .device = Device::flex()}}),
        head_b({.in = 8, .out = 3, .param = {.dtype = d, .device = Device::flex()}}),
        never({.in = 2, .out = 2, .param = {.dtype = d, .device = Device::flex()}}) {
    register_modules({{"fc1", fc1}, {"fc2", fc2}, {"head_b", head_b}, {"never", never}});
  }
  Tensor forward(const Tensor& x) override { return fc2(tanh(fc1(x))); }
  /// Uses head_b too (a parameter some ranks use and others do not).
  Tensor forward_both(const Tensor& x) {
    Tensor h = tanh(fc1(x));
    return add(fc2(h), head_b(h));
  }
};

/// Rows [begin, begin + n) of a fixed global batch of 16 rows: inputs [n, 4], targets [n, 3].
inline std::pair<Tensor, Tensor> batch(int64_t begin, int64_t n, DType d = DType::F64) {
  Generator g(1234);
  Tensor x = randn({16, 4}, g, {.dtype = d, .device = Device::flex()});
  Tensor y = randn({16, 3}, g, {.dtype = d, .device = Device::flex()});
  return {x.narrow(0, begin, n).contiguous(), y.narrow(0, begin, n).contiguous()};
}

inline Tensor sq_error_sum(const Tensor& out, const Tensor& y) {
  Tensor e = sub(out, y);
  return sum(mul(e, e));
}

}  // namespace ember::test

#pragma once
// Shared by the cuda tests: skip without a GPU, relative errors against a float64 reference.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>

#define EMBER_REQUIRE_GPU()                                                 \
  do {                                                                      \
    if (!::ember::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU here"; \
  } while (0)

namespace ember::testing {

/// ||got - want|| / ||want|| over float64 copies on the host (NaN anywhere: infinity).
inline double rel_error(const Tensor& got, const Tensor& want) {
  const auto g = got.to(Device::flex()).to(DType::F64).to_vector<double>();
  const auto w = want.to(Device::flex()).to(DType::F64).to_vector<double>();
  if (g.size() != w.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) || std::isnan(w[i])) return INFINITY;
    num += (g[i] - w[i]) * (g[i] - w[i]);
    den += w[i] * w[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

/// ||got - want|| / scale: for a reference that is zero up to rounding (a cancellation), where
/// rel_error divides rounding noise by rounding noise. `scale` is the size of what was summed.
inline double scaled_error(const Tensor& got, const Tensor& want, double scale) {
  const auto g = got.to(Device::flex()).to(DType::F64).to_vector<double>();
  const auto w = want.to(Device::flex()).to(DType::F64).to_vector<double>();
  if (g.size() != w.size()) return INFINITY;
  double num = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) || std::isnan(w[i])) return INFINITY;
    num += (g[i] - w[i]) * (g[i] - w[i]);
  }
  return std::sqrt(num) / scale;
}

}  // namespace ember::testing

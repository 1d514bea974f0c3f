#pragma once
// Shared by the vision tests: the goldens of tests/gen/gen_vision.py as tensors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "ember/ember.h"

namespace ember::test {

inline nlohmann::json load_vision_json(const std::string& name) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/vision/" + name);
  EXPECT_TRUE(f.good()) << name;
  return nlohmann::json::parse(f);
}

/// {"dtype", "shape", "data"} as a tensor on `dev`.
inline Tensor spec_tensor(const nlohmann::json& s, Device dev = Device::flex()) {
  Shape shape = s["shape"].get<std::vector<int64_t>>();
  std::vector<double> v = s["data"].get<std::vector<double>>();
  const std::string dt = s["dtype"];
  DType d = dt == "uint8" ? kU8 : dt == "int64" ? kI64 : kF32;
  return from_blob_copy(v.data(), kF64, shape, d, dev);
}

/// Max |a - b| over all elements (both converted to f64 on the host).
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(b.shape()));
  if (a.shape() != b.shape()) return 1e30;
  auto x = a.to(kF64).to_vector<double>(), y = b.to(kF64).to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

}  // namespace ember::test

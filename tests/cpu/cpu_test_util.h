#pragma once
// What the cpu backend's tests share: running one computation on flex and on cpu from the same
// inputs (views built the same way on each), comparing, and reading oneDNN's counters.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ember/backends/cpu/dnnl_ops.h"
#include "ember/ember.h"

namespace ember::test {

/// The largest |got - want| beyond atol + rtol * |want| ("" when within), NaNs equal.
inline std::string mismatch(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape())
    return "shape " + shape_str(got.shape()) + " vs " + shape_str(want.shape());
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(dtype_name(got.dtype())) + " vs " +
           std::string(dtype_name(want.dtype()));
  const auto g = got.to(Device::flex()).to_vector<double>();
  const auto w = want.to(Device::flex()).to_vector<double>();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (g[i] == w[i]) continue;  // equal infinities
    const double excess = std::fabs(g[i] - w[i]) - (atol + rtol * std::fabs(w[i]));
    if (!(excess <= worst)) worst = std::isnan(excess) ? INFINITY : excess, at = i;
  }
  if (worst == 0) return "";
  return "element " + std::to_string(at) + ": " + std::to_string(g[at]) + " vs " +
         std::to_string(w[at]);
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

/// f on copies of `inputs` on flex and on cpu; the cpu result and the number of calls oneDNN
/// served while computing it.
struct Both {
  Tensor flex, cpu;
  int64_t served = 0;
};
inline Both run_both(const Fn& f, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> a, b;
  for (const Tensor& t : inputs) {
    a.push_back(t.defined() ? t.to(Device::flex()) : t);
    b.push_back(t.defined() ? t.to(Device::cpu().eager()) : t);
  }
  Both r;
  r.flex = f(a);
  const int64_t rows = cpu::skinny_rows();
  cpu::set_skinny_rows(0);  // oneDNN's paths, small shapes included
  const int64_t before = cpu::dnnl_stats().served;
  r.cpu = f(b);
  r.served = cpu::dnnl_stats().served - before;
  cpu::set_skinny_rows(rows);
  return r;
}

/// Expects cpu == flex within tolerances and, with oneDNN built, that oneDNN served (or not).
inline void expect_same(const Fn& f, const std::vector<Tensor>& inputs, bool by_dnnl,
                        double rtol = 1e-4, double atol = 1e-4) {
  const Both r = run_both(f, inputs);
  EXPECT_TRUE(r.cpu.device().same_place(Device::cpu()));
  EXPECT_EQ(mismatch(r.cpu, r.flex, rtol, atol), "");
  if (cpu::dnnl_available()) EXPECT_EQ(r.served > 0, by_dnnl) << "oneDNN served " << r.served;
}

/// Uniform f32 values in [-1, 1).
inline Tensor rnd(const Shape& s, DType dt = DType::F32) {
  return uniform(-1.0, 1.0, s, {.device = Device::flex()}).to(dt);
}

}  // namespace ember::test

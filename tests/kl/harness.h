#pragma once
// Test harness for kernel templates: runs a rendered template kernel on flex tensors and
// compares with flex's eager results.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/kl/render.h"
#include "ember/kl/templates/pointwise.h"
#include "jit.h"

namespace ember::kl::test {

/// Empty string when equal: bitwise for integers and bools; for floats equal values, with
/// -0 == +0 and any NaN == any NaN.
inline std::string diff_exact(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return "shape/dtype differ: " + std::to_string(got.dim()) + "-d " + std::string(dtype_name(got.dtype())) +
           " vs " + std::to_string(want.dim()) + "-d " + std::string(dtype_name(want.dtype()));
  if (!is_floating(got.dtype())) {
    auto a = got.to(DType::I64).to_vector<int64_t>(), b = want.to(DType::I64).to_vector<int64_t>();
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return "at " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
    return "";
  }
  auto a = got.to(DType::F64).to_vector<double>(), b = want.to(DType::F64).to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))))
      return "at " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  return "";
}

/// Empty string when |got - want| <= atol + rtol |want| everywhere (NaN and inf must match).
inline std::string diff_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape()) return "shapes differ";
  auto a = got.to(DType::F64).to_vector<double>(), b = want.to(DType::F64).to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i]) || std::isinf(a[i]) || std::isinf(b[i])) {
      if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))))
        return "at " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
      continue;
    }
    if (std::fabs(a[i] - b[i]) > atol + rtol * std::fabs(b[i]))
      return "at " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  }
  return "";
}

inline std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().vec(); }

/// Renders one kernel, compiles it and returns the module (check ok()).
inline std::unique_ptr<Module> build(const Kernel& k) {
  return std::make_unique<Module>(cpp_renderer()->render(std::span(&k, 1)));
}

/// Runs a pointwise kernel: inputs are broadcast to `shape`, outputs are fresh tensors of
/// `shape` (or the given tensors). Returns the outputs.
inline std::vector<Tensor> run_pointwise(const std::vector<Tensor>& inputs, std::vector<DType> out_dtypes,
                                         const Shape& shape, const PwBody& body,
                                         std::vector<Scalar> scalars = {}, std::vector<DType> scalar_dtypes = {},
                                         std::vector<Tensor> outs = {}, int64_t piece = 0,
                                         std::string* key_out = nullptr) {
  std::vector<Tensor> views;
  std::vector<std::vector<int64_t>> strides;
  std::vector<DType> in_dtypes;
  for (const Tensor& t : inputs) {
    views.push_back(expand(t, shape));
    strides.push_back(strides_of(views.back()));
    in_dtypes.push_back(t.dtype());
  }
  if (outs.empty())
    for (DType d : out_dtypes) outs.push_back(empty(shape, {.dtype = d}));
  for (const Tensor& o : outs) strides.push_back(strides_of(o));
  PwLayout l = collapse(std::span<const int64_t>(shape), strides);
  PwKey key = pointwise_key(l, in_dtypes, out_dtypes, scalar_dtypes, cpp_host_target());
  if (key_out) *key_out = key.str();
  Kernel k = pointwise_kernel("pw", key, body);
  auto m = build(k);
  if (!m->ok()) return {};
  std::vector<const void*> bufs;
  for (const Tensor& t : views) bufs.push_back(t.raw_data());
  for (const Tensor& t : outs) bufs.push_back(t.raw_data());
  ArgPack a = pointwise_args(k, key, l, bufs, scalars);
  if (piece) launch_pieces(m->fn("pw"), a, pointwise_items(l), piece);
  else launch(m->fn("pw"), a, pointwise_items(l), kPointwiseGrain);
  return outs;
}

}  // namespace ember::kl::test

#pragma once
// Test harness for kernel templates: runs a rendered template kernel on flex tensors and
// compares with flex's eager results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ember/ember.h"
#include "ember/kl/render.h"
#include "ember/kl/serialize.h"
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

/// Kernels collected by a test, rendered into a few sources compiled side by side (compiling is
/// what takes time), then run: each job's launch callback fills its outputs.
class Batch {
 public:
  /// Adds `k` (renamed after its canonical hash, so equal kernels compile once); `launch` runs
  /// after compilation with the kernel's entry point.
  void add(Kernel k, std::function<void(KernelFn)> launch) {
    k.name = "k" + canonical_hash(k).hex();
    names_.push_back(k.name);
    kernels_.emplace(k.name, std::move(k));
    launches_.push_back(std::move(launch));
  }
  void run() {
    const size_t parts = std::max<size_t>(1, std::min<size_t>({4, std::thread::hardware_concurrency(), kernels_.size()}));
    std::vector<std::vector<Kernel>> lists(parts);
    std::map<std::string, size_t> part_of;
    for (auto& [name, k] : kernels_) {
      part_of[name] = part_of.size() % parts;
      lists[part_of[name]].push_back(k);
    }
    std::vector<std::unique_ptr<Module>> modules(parts);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < parts; ++i)
      threads.emplace_back([&, i] { modules[i] = std::make_unique<Module>(cpp_renderer()->render(lists[i])); });
    for (auto& t : threads) t.join();
    for (auto& m : modules)
      if (!m->ok()) return;
    for (size_t i = 0; i < launches_.size(); ++i) launches_[i](modules[part_of.at(names_[i])]->fn(names_[i]));
    launches_.clear();
  }
  size_t distinct() const { return kernels_.size(); }

 private:
  std::map<std::string, Kernel> kernels_;
  std::vector<std::string> names_;
  std::vector<std::function<void(KernelFn)>> launches_;
};

/// A job's outputs (filled when its batch runs) and the key it was specialised on.
struct Job {
  std::vector<Tensor> outputs;
  std::string key;
};
using JobPtr = std::shared_ptr<Job>;

/// A pointwise kernel over `inputs` broadcast to `shape`; outputs are fresh tensors of `shape`
/// (or the given ones). `piece` > 0 runs uneven ranges on one thread instead of the pool.
inline JobPtr pointwise_job(Batch& batch, const std::vector<Tensor>& inputs, std::vector<DType> out_dtypes,
                            const Shape& shape, const PwBody& body, std::vector<Scalar> scalars = {},
                            std::vector<DType> scalar_dtypes = {}, std::vector<Tensor> outs = {},
                            int64_t piece = 0) {
  auto job = std::make_shared<Job>();
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
  job->outputs = outs;
  PwLayout l = collapse(std::span<const int64_t>(shape), strides);
  PwKey key = pointwise_key(l, in_dtypes, out_dtypes, scalar_dtypes, cpp_host_target());
  job->key = key.str();
  Kernel k = pointwise_kernel("pw", key, body);
  Kernel copy = k;
  batch.add(std::move(k), [=](KernelFn f) {
    std::vector<const void*> bufs;
    for (const Tensor& t : views) bufs.push_back(t.raw_data());
    for (const Tensor& t : outs) bufs.push_back(t.raw_data());
    ArgPack a = pointwise_args(copy, key, l, bufs, scalars);
    if (piece) launch_pieces(f, a, pointwise_items(l), piece);
    else launch(f, a, pointwise_items(l), kPointwiseGrain);
  });
  return job;
}

/// pointwise_job in a batch of its own.
inline std::vector<Tensor> run_pointwise(const std::vector<Tensor>& inputs, std::vector<DType> out_dtypes,
                                         const Shape& shape, const PwBody& body,
                                         std::vector<Scalar> scalars = {}, std::vector<DType> scalar_dtypes = {},
                                         std::vector<Tensor> outs = {}, int64_t piece = 0,
                                         std::string* key_out = nullptr) {
  Batch b;
  JobPtr j = pointwise_job(b, inputs, out_dtypes, shape, body, scalars, scalar_dtypes, outs, piece);
  b.run();
  if (key_out) *key_out = j->key;
  return j->outputs;
}

}  // namespace ember::kl::test

#include "ember/kl/templates/row_reduce.h"

namespace ember::kl::test {

/// A row-reduce kernel: `inputs` broadcast to `shape`, reducing `dims`; outputs keep the
/// reduced dims as size 1 (reduced mode) or have `shape` (broadcast-back mode).
inline JobPtr row_reduce_job(Batch& batch, const std::vector<Tensor>& inputs, const Shape& shape, const Shape& dims,
                             int prologue_inputs, std::vector<Reduction> reductions, std::vector<DType> out_dtypes,
                             bool broadcast_back, const RowPrologue& pro, const RowEpilogue& epi,
                             std::vector<Scalar> scalars = {}, std::vector<DType> scalar_dtypes = {},
                             int64_t piece = 0) {
  auto job = std::make_shared<Job>();
  std::vector<Tensor> views;
  std::vector<std::vector<int64_t>> strides;
  std::vector<DType> in_dtypes;
  for (const Tensor& t : inputs) {
    views.push_back(expand(t, shape));
    strides.push_back(strides_of(views.back()));
    in_dtypes.push_back(t.dtype());
  }
  Shape kept = shape;
  for (int64_t d : dims) kept[size_t(d)] = 1;
  for (DType d : out_dtypes) {
    job->outputs.push_back(empty(broadcast_back ? shape : kept, {.dtype = d}));
    strides.push_back(strides_of(expand(job->outputs.back(), shape)));
  }
  RowLayout l = row_layout(std::span<const int64_t>(shape), strides, std::span<const int64_t>(dims));
  RowReduceKey key = row_reduce_key(l, in_dtypes, prologue_inputs, reductions, out_dtypes, broadcast_back,
                                    scalar_dtypes, cpp_host_target());
  job->key = key.str();
  Kernel k = row_reduce_kernel("rr", key, pro, epi);
  Kernel copy = k;
  std::vector<Tensor> outs = job->outputs;
  batch.add(std::move(k), [=](KernelFn f) {
    std::vector<const void*> bufs;
    for (const Tensor& t : views) bufs.push_back(t.raw_data());
    for (const Tensor& t : outs) bufs.push_back(t.raw_data());
    ArgPack a = row_reduce_args(copy, key, l, bufs, scalars);
    const int64_t items = row_reduce_items(key, l);
    if (piece) launch_pieces(f, a, items, piece);
    else launch(f, a, items, row_reduce_grain(key, l));
  });
  return job;
}

}  // namespace ember::kl::test

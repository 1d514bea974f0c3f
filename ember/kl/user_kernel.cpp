// The host kernel of user ops: lays a call out for the op's template, finds (or traces, renders
// and compiles through the kernel cache) the kernel of that specialisation, packs the arguments
// and runs it on ember's thread pool. A kernel that cannot be compiled runs the op's fallback,
// or fails with a DeviceError that says why.
#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "ember/backends/cpu/jit/jit.h"
#include "ember/backends/cpu/jit/launch.h"
#include "ember/backends/flex/loops.h"
#include "ember/error.h"
#include "ember/kl/cache/kernel_cache.h"
#include "ember/kl/serialize.h"
#include "ember/kl/user_op_impl.h"

namespace ember::kl {

UserKernel pointwise_op_kernel(PwBody body) {
  UserKernel k;
  k.kind = UserKernel::Kind::Pointwise;
  k.body = std::move(body);
  return k;
}

UserKernel row_reduce_op_kernel(std::vector<int64_t> reduce_dims, int prologue_inputs,
                                std::vector<Reduction> reductions, bool broadcast_back,
                                RowPrologue prologue, RowEpilogue epilogue) {
  UserKernel k;
  k.kind = UserKernel::Kind::RowReduce;
  k.reduce_dims = std::move(reduce_dims);
  k.prologue_inputs = prologue_inputs;
  k.reductions = std::move(reductions);
  k.broadcast_back = broadcast_back;
  k.prologue = std::move(prologue);
  k.epilogue = std::move(epilogue);
  return k;
}

namespace detail {
namespace {

constexpr const char* kSymbol = "ember_user_kernel";

// One specialisation: the traced kernel (its signature packs the arguments) and its code.
struct Spec {
  Kernel kernel;
  KernelHandle handle;
};

struct Specs {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<Spec>> map;
  KernelCache* cache = nullptr;  // null: the process's host kernel cache
};
Specs& specs() {
  static Specs s;
  return s;
}

const Target& host_target() {
  static const Target t = cpp_host_target();
  return t;
}

// Strides (elements) of `t` over `shape`, which it broadcasts to (stride 0 where it repeats).
std::vector<int64_t> strides_over(const Tensor& t, const Shape& shape, const char* name, size_t i) {
  const size_t rank = shape.size(), r = size_t(t.dim());
  auto fail = [&] {
    ember::detail::throw_shape(name, "input " + std::to_string(i) + " of shape " +
                                         shape_str(t.shape()) + " does not broadcast to " +
                                         shape_str(shape));
  };
  if (r > rank) fail();
  std::vector<int64_t> s(rank, 0);
  for (size_t d = 0; d < r; ++d) {
    const int64_t n = t.size(int64_t(d)), want = shape[rank - r + d];
    if (n != want && n != 1) fail();
    s[rank - r + d] = n == 1 ? 0 : t.stride(int64_t(d));
  }
  return s;
}

// Strides of a reduced-shape output over the full shape: 0 along the reduced dims, which it
// has as size 1 (keepdim) or drops.
std::vector<int64_t> reduced_strides(const Tensor& o, const Shape& full,
                                     const std::vector<bool>& red, const char* name, size_t i) {
  std::vector<int64_t> s(full.size(), 0);
  const size_t nred = size_t(std::count(red.begin(), red.end(), true));
  size_t k = 0;
  for (size_t d = 0; d < full.size(); ++d) {
    if (size_t(o.dim()) == full.size()) {
      if (o.size(int64_t(d)) != (red[d] ? 1 : full[d])) k = size_t(-1);
      if (!red[d]) s[d] = o.stride(int64_t(d));
    } else if (size_t(o.dim()) == full.size() - nred) {
      if (!red[d]) {
        if (o.size(int64_t(k)) != full[d])
          k = size_t(-1);
        else
          s[d] = o.stride(int64_t(k++));
      }
    } else {
      k = size_t(-1);
    }
    if (k == size_t(-1))
      ember::detail::throw_shape(name, "output " + std::to_string(i) + " of shape " +
                                           shape_str(o.shape()) + " is not input 0's shape " +
                                           shape_str(full) + " reduced over the kernel's dims");
  }
  return s;
}

// Compiles `k` alone into one source through the cache (at once when it is known).
KernelHandle compile(const Kernel& k) {
  const std::unique_ptr<Renderer> r = cpp_renderer(host_target());
  const std::string key = r->cache_id() + " " + kSymbol + ":" + canonical_hash(k).hex();
  KernelCache& cache = specs().cache ? *specs().cache : cpu::jit::host_kernel_cache();
  return cache.request(key, r->render(std::span<const Kernel>(&k, 1)), {kSymbol});
}

// The specialisation `key` of op `e`, traced by `trace` the first time it is asked for.
std::shared_ptr<Spec> find_spec(UserOpEntry& e, const std::string& key,
                                const std::function<Kernel()>& trace) {
  Specs& s = specs();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.map.find(key);
  if (it != s.map.end()) return it->second;
  auto spec = std::make_shared<Spec>();
  spec->kernel = trace();
  spec->handle = compile(spec->kernel);
  ++e.kernels;
  s.map.emplace(key, spec);
  return spec;
}

std::vector<DType> dtypes_of(std::span<const Tensor> ts) {
  std::vector<DType> d;
  for (const Tensor& t : ts) d.push_back(t.dtype());
  return d;
}

}  // namespace

void set_user_op_cache(KernelCache* cache) {
  Specs& s = specs();
  std::lock_guard<std::mutex> lock(s.mu);
  s.cache = cache;
  s.map.clear();
}

TensorList user_op_kernel(const OpCall& c) {
  UserOpEntry& e = user_op_entry(c.attrs.i[0]);
  const char* name = e.def.name.c_str();
  const std::span<const double> params = user_op_params(c.attrs);
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!c.inputs[i].defined())
      ember::detail::throw_value(name, "input " + std::to_string(i) + " is undefined");
  TensorList outs;
  for (int i = 0; i < c.meta.n; ++i) outs.push_back(flex::new_output(c, i));
  const std::vector<TensorMeta> metas(c.meta.m.begin(), c.meta.m.begin() + c.meta.n);
  const UserKernel uk = e.def.kernel(UserCall{e.def.name, c.inputs, metas, params});

  std::vector<DType> pdt = uk.param_dtypes;
  if (pdt.empty())
    pdt.assign(params.size(), metas[0].dtype == DType::F64 ? DType::F64 : DType::F32);
  if (pdt.size() != params.size())
    ember::detail::throw_value(name, "the kernel types " + std::to_string(pdt.size()) +
                                         " scalar parameters, the call has " +
                                         std::to_string(params.size()));
  std::vector<const void*> buffers;
  for (const Tensor& t : c.inputs) buffers.push_back(t.raw_data());
  for (const Tensor& t : outs) buffers.push_back(t.raw_data());
  const std::vector<Scalar> scalars(params.begin(), params.end());
  const std::vector<DType> in_dt = dtypes_of(c.inputs), out_dt = dtypes_of(outs);
  const std::string id = std::to_string(c.attrs.i[0]) + " ";

  ArgPack args;
  std::shared_ptr<Spec> spec;
  int64_t items = 0, grain = 1;
  if (uk.kind == UserKernel::Kind::Pointwise) {
    if (!uk.body) ember::detail::throw_value(name, "a pointwise kernel needs a body");
    const Shape& shape = outs[0].shape();
    std::vector<std::vector<int64_t>> strides;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      strides.push_back(strides_over(c.inputs[i], shape, name, i));
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].shape() != shape)
        ember::detail::throw_shape(name, "a pointwise kernel's outputs share one shape, found " +
                                             shape_str(shape) + " and " +
                                             shape_str(outs[i].shape()));
      strides.push_back(outs[i].strides().vec());
    }
    const PwLayout pl = collapse(std::span<const int64_t>(shape), strides);
    const PwKey pk = pointwise_key(pl, in_dt, out_dt, pdt, host_target());
    spec = find_spec(e, id + pk.str(), [&] { return pointwise_kernel(kSymbol, pk, uk.body); });
    if (spec->handle.get().ok) args = pointwise_args(spec->kernel, pk, pl, buffers, scalars);
    items = pointwise_items(pl);
    grain = kPointwiseGrain;
  } else {
    if (c.inputs.empty() || !uk.prologue || !uk.epilogue || uk.reductions.empty())
      ember::detail::throw_value(name,
                                 "a row-reduce kernel needs an input, a prologue, "
                                 "an epilogue and at least one reduction");
    if (uk.prologue_inputs < 1 || size_t(uk.prologue_inputs) > c.inputs.size())
      ember::detail::throw_value(name, "prologue_inputs must be in [1, " +
                                           std::to_string(c.inputs.size()) + "], found " +
                                           std::to_string(uk.prologue_inputs));
    const Shape& full = c.inputs[0].shape();
    std::vector<bool> red(full.size(), false);
    std::vector<int64_t> dims;
    for (int64_t d : uk.reduce_dims) {
      const int64_t nd = d < 0 ? d + int64_t(full.size()) : d;
      if (nd < 0 || nd >= int64_t(full.size()) || red[size_t(nd)])
        ember::detail::throw_index(name, "reduce dim " + std::to_string(d) +
                                             " is out of range or repeated for input 0 of shape " +
                                             shape_str(full));
      red[size_t(nd)] = true;
      dims.push_back(nd);
    }
    std::vector<std::vector<int64_t>> strides;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      strides.push_back(strides_over(c.inputs[i], full, name, i));
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!uk.broadcast_back)
        strides.push_back(reduced_strides(outs[i], full, red, name, i));
      else if (outs[i].shape() != full)
        ember::detail::throw_shape(name, "a broadcast-back kernel's outputs have input 0's shape " +
                                             shape_str(full) + ", found " +
                                             shape_str(outs[i].shape()));
      else
        strides.push_back(outs[i].strides().vec());
    }
    const RowLayout rl = row_layout(std::span<const int64_t>(full), strides, dims);
    const RowReduceKey rk = row_reduce_key(rl, in_dt, uk.prologue_inputs, uk.reductions, out_dt,
                                           uk.broadcast_back, pdt, host_target());
    spec = find_spec(e, id + rk.str(),
                     [&] { return row_reduce_kernel(kSymbol, rk, uk.prologue, uk.epilogue); });
    if (spec->handle.get().ok) args = row_reduce_args(spec->kernel, rk, rl, buffers, scalars);
    items = row_reduce_items(rk, rl);
    grain = row_reduce_grain(rk, rl);
  }

  const KernelSet& set = spec->handle.get();
  if (!set.ok)
    return run_user_fallback(e, c,
                             "its kernel could not be compiled for the host CPU, and it "
                             "has no fallback (UserOpDef::fallback): " +
                                 set.error);
  ++e.jit_calls;
  if (items > 0) cpu::jit::launch(set.fns[0], args.data(), items, grain);
  return outs;
}

}  // namespace detail
}  // namespace ember::kl

#include "ember/fusion/row.h"

#include <cstring>

#include "ember/error.h"
#include "ember/kl/render.h"
#include "ember/ops/common.h"
#include "ember/ops/reduce.h"

namespace ember::fusion {
namespace {

bool reducing(OpId op) {
  return op == OpId::sum || op == OpId::mean || op == OpId::amax || op == OpId::amin;
}
bool norm(OpId op) { return op == OpId::layer_norm || op == OpId::rms_norm; }

}  // namespace

// The dims the tail reduces, over its input's rank.
Shape row_reduced_dims(const Node& n, int64_t rank) {
  switch (n.op) {
    case OpId::softmax: case OpId::log_softmax:
      return {wrap_dim(n.attrs.i[0], rank, op_name(n.op))};
    case OpId::layer_norm: case OpId::rms_norm:
    case OpId::layer_norm_backward: case OpId::rms_norm_backward: {
      Shape d;
      for (int64_t i = rank - int64_t(n.attrs.ints.size()); i < rank; ++i) d.push_back(i);
      return d;
    }
    default:
      return ops::reduce_dims(n.attrs.ints, rank, op_name(n.op));
  }
}

DType row_acc(const Node& n) {
  return n.inputs[0].dtype == DType::F64 || n.meta.m[0].dtype == DType::F64 ? DType::F64
                                                                              : DType::F32;
}

namespace {

// Partial rows for a whole-tensor reduction: a divisor of `n` leaving rows of >= 4096.
int64_t split_of(int64_t n) {
  if (n < (int64_t(1) << 16)) return 1;
  for (int64_t k = 64; k >= 2; k /= 2)
    if (n % k == 0 && n / k >= 4096) return k;
  return 1;
}

}  // namespace

bool row_broadcasts_back(const Node& n) { return !reducing(n.op); }

bool row_tail(const Node& n) {
  if (n.target.defined() || n.meta.n != 1 || n.inputs.empty() || !n.inputs[0].defined)
    return false;
  if (!reducing(n.op) && !norm(n.op) && n.op != OpId::softmax && n.op != OpId::log_softmax)
    return false;
  if (!is_floating(n.inputs[0].dtype) || !is_floating(n.meta.m[0].dtype)) return false;
  for (size_t j = 1; j < n.inputs.size(); ++j) {
    const NodeInput& in = n.inputs[j];
    if (!in.defined) continue;
    if (in.value < 0 && in.tensor.impl()->is_constant) return false;
    if (!is_floating(in.dtype)) return false;
  }
  return true;
}

bool collect_prologue(RowGroup& g, const std::vector<Node>& nodes,
                      const std::vector<Value>& values) {
  g.chain.collect(g.ops, nodes, values, g.shape);
  const NodeInput& x = nodes[size_t(g.tail)].inputs[0];
  const bool x_in_chain = x.value >= 0 && g.chain.makes(nodes, x.value);
  if (!x_in_chain)
    g.x_slot = x.value >= 0 ? g.ops.add_value(x.value, nodes, values, g.shape)
                            : g.ops.add_tensor(nodes, g.tail, 0, g.shape);
  g.prologue_inputs = int(g.ops.inputs.size());
  return x_in_chain;
}

bool build_row(RowGroup& g, const std::vector<Node>& nodes, const std::vector<Value>& values,
               const kl::Target& target) {
  const Node& t = nodes[size_t(g.tail)];
  const int64_t rank = int64_t(g.shape.size());
  const int64_t numel = numel_of(g.shape);
  if (numel == 0) return false;
  const Shape dims = row_reduced_dims(t, rank);
  int64_t row = 1;
  for (int64_t d : dims) row *= g.shape[size_t(d)];
  if (row == 0) return false;
  const DType acc = row_acc(t);
  const DType out = t.meta.m[0].dtype;
  g.broadcast_back = !reducing(t.op);

  const bool x_in_chain = collect_prologue(g, nodes, values);
  const NodeInput& x = t.inputs[0];
  int32_t w_slot = -1, b_slot = -1;
  for (size_t j = 1; j < t.inputs.size() && j < 3; ++j) {
    const NodeInput& in = t.inputs[j];
    if (!in.defined) continue;
    const int32_t s = in.value >= 0 ? g.ops.add_value(in.value, nodes, values, g.shape)
                                    : g.ops.add_tensor(nodes, g.tail, int32_t(j), g.shape);
    (j == 1 ? w_slot : b_slot) = s;
  }
  int32_t n_scalar = -1, eps_scalar = -1;
  if (t.op == OpId::mean || t.op == OpId::rms_norm) {
    ScalarSource s;
    s.kind = ScalarSource::Kind::Fixed;
    s.fixed = acc == DType::F64 ? Scalar(double(row)) : Scalar(double(float(row)));
    n_scalar = g.ops.add_scalar(s, acc);
  }
  if (norm(t.op)) {
    ScalarSource s;
    s.kind = ScalarSource::Kind::Eps;
    s.node = g.tail;
    eps_scalar = g.ops.add_scalar(s, acc);
  }

  // Geometry: the input's shape, or [split, numel / split] for a split whole reduction.
  std::vector<std::vector<int64_t>> strides = g.ops.strides;
  Shape shape = g.shape;
  Shape rdims = dims;
  if (reducing(t.op) && row == numel && out == acc) g.split = split_of(numel);
  if (g.split > 1) {
    const Shape cs = contiguous_strides(g.shape);
    auto all_zero = [](const std::vector<int64_t>& s) {
      for (int64_t v : s)
        if (v != 0) return false;
      return true;
    };
    for (const auto& s : strides) {
      bool contiguous = true;
      for (size_t d = 0; d < s.size(); ++d)
        contiguous = contiguous && (s[d] == cs[d] || g.shape[d] == 1);
      if (!all_zero(s) && !contiguous) g.split = 1;
    }
    if (g.split > 1) {
      const int64_t m = numel / g.split;
      for (auto& s : strides) s = all_zero(s) ? std::vector<int64_t>{0, 0} : std::vector<int64_t>{m, 1};
      shape = {g.split, m};
      rdims = {1};
      strides.push_back({1, 0});
    }
  }
  if (g.split == 1) {
    if (g.broadcast_back) {
      const Shape cs = contiguous_strides(g.shape);
      for (size_t k = 0; k < 1 + g.side.size(); ++k) strides.emplace_back(cs.begin(), cs.end());
    } else {
      Shape kept = g.shape;
      for (int64_t d : dims) kept[size_t(d)] = 1;
      const Shape cs = contiguous_strides(kept);
      std::vector<int64_t> s(cs.begin(), cs.end());
      for (int64_t d : dims) s[size_t(d)] = 0;
      strides.push_back(std::move(s));
    }
  }
  try {
    g.layout = kl::row_layout(std::span<const int64_t>(shape.data(), shape.size()), strides,
                              std::span<const int64_t>(rdims.data(), rdims.size()));
  } catch (const ValueError&) {
    return false;  // dims the template cannot walk as one row
  }

  kl::Combiner c = kl::Combiner::Sum;
  if (t.op == OpId::amax) c = kl::Combiner::Max;
  if (t.op == OpId::amin) c = kl::Combiner::Min;
  if (t.op == OpId::softmax || t.op == OpId::log_softmax) c = kl::Combiner::Softmax;
  if (t.op == OpId::layer_norm) c = kl::Combiner::Welford;
  const DType store = g.split > 1 ? acc : out;
  std::vector<DType> out_dtypes{store};
  for (int32_t v : g.side) out_dtypes.push_back(nodes[size_t(values[size_t(v)].node)].meta.m[values[size_t(v)].out].dtype);
  g.key = kl::row_reduce_key(g.layout, g.ops.in_dtypes, g.prologue_inputs, {{c, acc}}, out_dtypes,
                             g.broadcast_back, g.ops.scalar_dtypes, target);

  const size_t nvalues = values.size();
  const int32_t xv = x_in_chain ? x.value : -1;
  const OpId op = t.op;
  // The tail's input at an element, in the accumulation dtype.
  auto input = [&, xv](std::span<const kl::Expr> in, std::span<const kl::Expr> sc) {
    if (xv < 0) return kl::cast(in[size_t(g.x_slot)], acc);
    const std::vector<kl::Expr> val = g.chain.trace(nodes, nvalues, in, sc);
    return kl::cast(val[size_t(xv)], acc);
  };
  g.code.kernel = kl::row_reduce_kernel(
      "k", g.key,
      [&, op](std::span<const kl::Expr> in, std::span<const kl::Expr> sc) {
        kl::Expr v = input(in, sc);
        if (op == OpId::rms_norm) v = v * v;
        return std::vector<kl::Expr>{v};
      },
      [&, op](std::span<const kl::Expr> r, std::span<const kl::Expr> in,
              std::span<const kl::Expr> sc) {
        kl::Expr y;
        switch (op) {
          case OpId::mean: y = r[0] / sc[size_t(n_scalar)]; break;
          case OpId::softmax: y = kl::exp(input(in, sc) - r[0]) / r[1]; break;
          case OpId::log_softmax: y = input(in, sc) - r[0] - kl::log(r[1]); break;
          case OpId::layer_norm: {
            const kl::Expr var = r[1] / kl::cast(r[2], acc);
            y = (input(in, sc) - r[0]) / kl::sqrt(var + sc[size_t(eps_scalar)]);
            break;
          }
          case OpId::rms_norm:
            y = input(in, sc) / kl::sqrt(r[0] / sc[size_t(n_scalar)] + sc[size_t(eps_scalar)]);
            break;
          default: y = r[0]; break;
        }
        if (w_slot >= 0) y = y * kl::cast(in[size_t(w_slot)], acc);
        if (b_slot >= 0) y = y + kl::cast(in[size_t(b_slot)], acc);
        std::vector<kl::Expr> outs{kl::cast(y, store)};
        if (!g.side.empty()) {
          const std::vector<kl::Expr> val = g.chain.trace(nodes, nvalues, in, sc);
          for (int32_t v : g.side) outs.push_back(val[size_t(v)]);
        }
        return outs;
      });
  g.stores = t.outputs;
  g.stores.insert(g.stores.end(), g.side.begin(), g.side.end());
  return true;
}

int launch_row(const RowGroup& g, const std::vector<Node>& nodes, const std::vector<Tensor>& vals,
               Executor& exec, Device place) {
  if (g.loss) {
    launch_row_loss(g, nodes, vals, exec, place);
    return 2;
  }
  const Node& t = nodes[size_t(g.tail)];
  std::vector<const void*> bufs;
  g.ops.buffers(nodes, vals, bufs);
  const Tensor& dst = vals[size_t(g.stores[0])];
  Tensor partial;
  if (g.split > 1) {
    partial = detail::empty_tensor({g.split}, row_acc(t), t.device.without_layers());
    bufs.push_back(partial.impl()->data());
  } else {
    bufs.push_back(dst.impl()->data());
    for (size_t k = 1; k < g.stores.size(); ++k) bufs.push_back(vals[size_t(g.stores[k])].impl()->data());
  }
  const std::vector<Scalar> scalars = g.ops.scalar_values(nodes);
  const kl::ArgPack args = kl::row_reduce_args(g.code.kernel, g.key, g.layout, bufs, scalars);
  exec.launch(place, g.code.kernel, g.code.handle.get().fns[size_t(g.code.fn)], args,
              kl::row_reduce_items(g.key, g.layout), kl::row_reduce_grain(g.key, g.layout), "fusion");
  if (g.split > 1) {
    // The partial results (means already divided by the whole count) combined.
    Tensor r = t.op == OpId::amax   ? amax(partial)
               : t.op == OpId::amin ? amin(partial)
                                    : sum(partial);
    exec.copy(place, dst.impl()->data(), r.impl()->data(), itemsize(r.dtype()));
  }
  return 1;
}

}  // namespace ember::fusion

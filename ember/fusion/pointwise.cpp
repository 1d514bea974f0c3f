#include "ember/fusion/pointwise.h"

#include "ember/detail/capture.h"
#include "ember/kl/trace_op.h"

namespace ember::fusion {

bool pointwise_node(const Node& n) {
  if (random_node(n)) return !n.target.defined();
  if (!kl::is_elementwise(n.op) || n.target.defined() || n.meta.n != 1) return false;
  switch (n.op) {
    case OpId::div: case OpId::remainder: case OpId::fmod:
      // Integer division by zero is an error eagerly; a kernel cannot raise it.
      return is_floating(n.meta.compute) || (n.op == OpId::div && n.attrs.mode == 0);
    default:
      return true;
  }
}

void build_pointwise(PointwiseGroup& g, const std::vector<Node>& nodes,
                     const std::vector<Value>& values, const kl::Target& target) {
  g.chain.collect(g.ops, nodes, values, g.shape);
  std::vector<DType> out_dtypes;
  std::vector<std::vector<int64_t>> strides = g.ops.strides;
  const Shape cs = contiguous_strides(g.shape);
  for (int32_t v : g.stores) {
    const Value& val = values[size_t(v)];
    out_dtypes.push_back(nodes[size_t(val.node)].meta.m[val.out].dtype);
    strides.emplace_back(cs.begin(), cs.end());
  }
  for (int32_t ni : g.targets) {
    const Tensor& dst = nodes[size_t(ni)].target;
    out_dtypes.push_back(dst.dtype());
    strides.push_back(dst.strides().vec());
  }
  g.layout = kl::collapse(std::span<const int64_t>(g.shape.data(), g.shape.size()), strides);
  g.key = kl::pointwise_key(g.layout, g.ops.in_dtypes, out_dtypes, g.ops.scalar_dtypes, target);
  g.code.kernel = kl::pointwise_kernel_at(
      "k", g.key,
      [&](std::span<const kl::Expr> loaded, std::span<const kl::Expr> sc, const kl::Expr& pos) {
        const std::vector<kl::Expr> val = g.chain.trace(nodes, values.size(), loaded, sc, pos);
        std::vector<kl::Expr> outs;
        for (int32_t v : g.stores) outs.push_back(val[size_t(v)]);
        for (int32_t ni : g.targets) {
          const Node& c = nodes[size_t(ni)];
          kl::Expr v = val[size_t(c.inputs[1].value)];
          outs.push_back(v.dtype() == c.target.dtype() ? v : kl::cast(v, c.target.dtype()));
        }
        return outs;
      });
}

void launch_pointwise(const PointwiseGroup& g, const std::vector<Node>& nodes,
                      const std::vector<Tensor>& vals, Executor& exec, Device place) {
  const int64_t items = kl::pointwise_items(g.layout);
  if (items == 0) return;
  std::vector<const void*> bufs;
  bufs.reserve(g.ops.inputs.size() + g.stores.size());
  g.ops.buffers(nodes, vals, bufs);
  for (int32_t v : g.stores) bufs.push_back(vals[size_t(v)].impl()->data());
  for (int32_t ni : g.targets) bufs.push_back(nodes[size_t(ni)].target.impl()->data());
  const std::vector<Scalar> scalars = g.ops.scalar_values(nodes);
  const kl::ArgPack args = kl::pointwise_args(g.code.kernel, g.key, g.layout, bufs, scalars);
  if (detail::Capture* c = detail::capture_on(place)) [[unlikely]] {
    // A replay rewrites this kernel's Philox offsets (its random draws) with the next ones.
    c->next_philox_slots.clear();
    for (size_t j = 0; j < g.ops.scalars.size(); ++j) {
      const ScalarSource& s = g.ops.scalars[j];
      if (s.kind == ScalarSource::Kind::Philox && s.index == 1 && g.ops.scalar_dtypes[j] == DType::I64)
        c->next_philox_slots.emplace_back(args.num_buffers() + int(j), uint64_t(scalars[j].to_int()));
    }
  }
  exec.launch(place, g.code.kernel, g.code.handle.get().fns[size_t(g.code.fn)], args, items,
              kl::pointwise_grain(g.key, exec.target(place)), "fusion");
}

}  // namespace ember::fusion

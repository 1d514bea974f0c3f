// A row group with a pointwise epilogue: a sum or mean over some dims (keeping them) whose
// value a pointwise group over the full shape reads right after, broadcast back over the row.
#include "ember/error.h"
#include "ember/fusion/row.h"
#include "ember/kl/render.h"

namespace ember::fusion {

bool build_row_epilogue(RowGroup& g, const PointwiseGroup* before, const PointwiseGroup& p,
                        const std::vector<Node>& nodes, const std::vector<Value>& values,
                        const kl::Target& target) {
  const Node& t = nodes[size_t(g.tail)];
  if ((t.op != OpId::sum && t.op != OpId::mean) || g.split > 1 || !g.side.empty() ||
      !g.epilogue.empty() || (before && (!g.chain.nodes.empty() || !before->targets.empty() ||
                                         !before->chain.forwards.empty())))
    return false;
  if (p.chain.positional(nodes) || (before && before->chain.positional(nodes))) return false;
  const int64_t rank = int64_t(g.shape.size());
  if (int64_t(t.meta.m[0].shape.size()) != rank || p.shape != g.shape || !p.targets.empty() ||
      !p.chain.forwards.empty() || p.stores.empty())
    return false;
  const int32_t tv = t.outputs[0];
  const Shape dims = row_reduced_dims(t, rank);
  int64_t row = 1;
  for (int64_t d : dims) row *= g.shape[size_t(d)];
  const DType acc = row_acc(t);

  RowGroup r;
  r.chain.nodes = before ? before->chain.nodes : g.chain.nodes;
  r.tail = g.tail;
  r.shape = g.shape;
  r.broadcast_back = true;
  const bool x_in_chain = collect_prologue(r, nodes, values);
  const NodeInput& x = t.inputs[0];
  int32_t n_scalar = -1;
  if (t.op == OpId::mean) {
    ScalarSource s;
    s.kind = ScalarSource::Kind::Fixed;
    s.fixed = acc == DType::F64 ? Scalar(double(row)) : Scalar(double(float(row)));
    n_scalar = r.ops.add_scalar(s, acc);
  }
  // The epilogue's operands: the tail's value (computed, -1), a prologue value (computed again,
  // -2 - value), or operands of this kernel.
  std::vector<int32_t> slot_of;
  bool reads_chain = false;
  for (const MemOperand& m : p.ops.inputs) {
    if (m.value == tv) slot_of.push_back(-1);
    else if (m.value >= 0 && r.chain.makes(nodes, m.value)) {
      slot_of.push_back(-2 - m.value);
      reads_chain = true;
    }
    else if (m.value >= 0) slot_of.push_back(r.ops.add_value(m.value, nodes, values, r.shape));
    else slot_of.push_back(r.ops.add_tensor(nodes, m.node, m.input, r.shape));
  }
  const size_t first_scalar = r.ops.scalars.size();
  for (size_t k = 0; k < p.ops.scalars.size(); ++k)
    r.ops.add_scalar(p.ops.scalars[k], p.ops.scalar_dtypes[k]);

  std::vector<std::vector<int64_t>> strides = r.ops.strides;
  std::vector<DType> out_dtypes;
  const Shape cs = contiguous_strides(r.shape);
  for (int32_t v : p.stores) {
    strides.emplace_back(cs.begin(), cs.end());
    out_dtypes.push_back(nodes[size_t(values[size_t(v)].node)].meta.m[values[size_t(v)].out].dtype);
  }
  try {
    r.layout = kl::row_layout(std::span<const int64_t>(r.shape.data(), r.shape.size()), strides,
                              std::span<const int64_t>(dims.data(), dims.size()));
  } catch (const ValueError&) {
    return false;
  }
  r.key = kl::row_reduce_key(r.layout, r.ops.in_dtypes, r.prologue_inputs,
                             {{kl::Combiner::Sum, acc}}, out_dtypes, true, r.ops.scalar_dtypes,
                             target);
  const size_t nvalues = values.size();
  const int32_t xv = x_in_chain ? x.value : -1;
  const DType tail_dtype = t.meta.m[0].dtype;
  const RowGroup& rr = r;
  r.code.kernel = kl::row_reduce_kernel(
      "k", r.key,
      [&](std::span<const kl::Expr> in, std::span<const kl::Expr> sc) {
        if (xv < 0) return std::vector<kl::Expr>{kl::cast(in[size_t(rr.x_slot)], acc)};
        const std::vector<kl::Expr> val = rr.chain.trace(nodes, nvalues, in, sc);
        return std::vector<kl::Expr>{kl::cast(val[size_t(xv)], acc)};
      },
      [&](std::span<const kl::Expr> red, std::span<const kl::Expr> in,
          std::span<const kl::Expr> sc) {
        kl::Expr y = t.op == OpId::mean ? red[0] / sc[size_t(n_scalar)] : red[0];
        y = kl::cast(y, tail_dtype);
        std::vector<kl::Expr> chain;
        if (reads_chain) chain = rr.chain.trace(nodes, nvalues, in, sc);
        std::vector<kl::Expr> loaded;
        for (int32_t s : slot_of)
          loaded.push_back(s == -1 ? y : s < -1 ? chain[size_t(-2 - s)] : in[size_t(s)]);
        const std::vector<kl::Expr> val =
            p.chain.trace(nodes, nvalues, loaded, sc.subspan(first_scalar));
        std::vector<kl::Expr> outs;
        for (int32_t v : p.stores) outs.push_back(val[size_t(v)]);
        return outs;
      });
  r.stores = p.stores;
  r.epilogue = p.chain.nodes;
  g = std::move(r);
  return true;
}

}  // namespace ember::fusion

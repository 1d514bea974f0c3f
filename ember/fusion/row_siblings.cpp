// Sibling row reductions: two reductions over the same shape and dims (the affine gradients of
// a norm's backward, sum(g * xhat) and sum(g), over every dim but the features) become one row
// kernel with two combiners, reading what both prologues share (g) once.
#include "ember/error.h"
#include "ember/fusion/row.h"
#include "ember/kl/render.h"

namespace ember::fusion {
namespace {

bool plain_reduction(const RowGroup& g, const Node& t) {
  return (t.op == OpId::sum || t.op == OpId::mean || t.op == OpId::amax || t.op == OpId::amin) &&
         g.split == 1 && g.side.empty() && g.epilogue.empty() && g.sibling < 0 && !g.loss &&
         !g.broadcast_back;
}

kl::Combiner combiner_of(OpId op) {
  return op == OpId::amax ? kl::Combiner::Max
         : op == OpId::amin ? kl::Combiner::Min
                            : kl::Combiner::Sum;
}

}  // namespace

bool build_row_sibling(RowGroup& a, const RowGroup& b, const std::vector<Node>& nodes,
                       const std::vector<Value>& values, const kl::Target& target) {
  const Node& ta = nodes[size_t(a.tail)];
  const Node& tb = nodes[size_t(b.tail)];
  if (!plain_reduction(a, ta) || !plain_reduction(b, tb) || a.shape != b.shape) return false;
  const int64_t rank = int64_t(a.shape.size());
  const Shape dims = row_reduced_dims(ta, rank);
  if (row_reduced_dims(tb, rank) != dims) return false;
  // b must not read what a writes (one kernel writes a's output while b's prologue reads), as
  // a value or through a view of its storage.
  const int32_t av = ta.outputs[0];
  const Storage* as = values[size_t(av)].raw;
  auto reads_a = [&](const Node& n) {
    for (const NodeInput& in : n.inputs)
      if (in.value == av ||
          (in.value < 0 && in.tensor.defined() && in.tensor.impl()->storage.get() == as))
        return true;
    return false;
  };
  for (int32_t ni : b.chain.nodes)
    if (reads_a(nodes[size_t(ni)])) return false;
  if (reads_a(tb)) return false;
  int64_t row = 1;
  for (int64_t d : dims) row *= a.shape[size_t(d)];

  RowGroup r;
  r.chain.nodes = a.chain.nodes;
  r.chain.nodes.insert(r.chain.nodes.end(), b.chain.nodes.begin(), b.chain.nodes.end());
  r.tail = a.tail;
  r.sibling = b.tail;
  r.shape = a.shape;
  r.chain.collect(r.ops, nodes, values, r.shape);
  // Each tail's input: a chain value (-1 - value) or an operand.
  auto input_slot = [&](const Node& t, int32_t ti) {
    const NodeInput& x = t.inputs[0];
    if (x.value >= 0 && r.chain.makes(nodes, x.value)) return -1 - x.value;
    return x.value >= 0 ? r.ops.add_value(x.value, nodes, values, r.shape)
                        : r.ops.add_tensor(nodes, ti, 0, r.shape);
  };
  const int32_t xa = input_slot(ta, a.tail), xb = input_slot(tb, b.tail);
  r.prologue_inputs = int(r.ops.inputs.size());
  const DType acc_a = row_acc(ta), acc_b = row_acc(tb);
  auto count = [&](DType acc) {
    ScalarSource s;
    s.kind = ScalarSource::Kind::Fixed;
    s.fixed = acc == DType::F64 ? Scalar(double(row)) : Scalar(double(float(row)));
    return r.ops.add_scalar(s, acc);
  };
  const int32_t na = ta.op == OpId::mean ? count(acc_a) : -1;
  const int32_t nb = tb.op == OpId::mean ? count(acc_b) : -1;

  std::vector<std::vector<int64_t>> strides = r.ops.strides;
  Shape kept = r.shape;
  for (int64_t d : dims) kept[size_t(d)] = 1;
  const Shape cs = contiguous_strides(kept);
  std::vector<int64_t> os(cs.begin(), cs.end());
  for (int64_t d : dims) os[size_t(d)] = 0;
  strides.push_back(os);
  strides.push_back(os);
  try {
    r.layout = kl::row_layout(std::span<const int64_t>(r.shape.data(), r.shape.size()), strides,
                              std::span<const int64_t>(dims.data(), dims.size()));
  } catch (const ValueError&) {
    return false;
  }
  const DType out_a = ta.meta.m[0].dtype, out_b = tb.meta.m[0].dtype;
  r.key = kl::row_reduce_key(r.layout, r.ops.in_dtypes, r.prologue_inputs,
                             {{combiner_of(ta.op), acc_a}, {combiner_of(tb.op), acc_b}},
                             {out_a, out_b}, false, r.ops.scalar_dtypes, target);
  const size_t nvalues = values.size();
  const RowGroup& rr = r;
  r.code.kernel = kl::row_reduce_kernel(
      "k", r.key,
      [&](std::span<const kl::Expr> in, std::span<const kl::Expr> sc) {
        std::vector<kl::Expr> val;
        if (xa < 0 || xb < 0) val = rr.chain.trace(nodes, nvalues, in, sc);
        auto pick = [&](int32_t s) { return s < 0 ? val[size_t(-1 - s)] : in[size_t(s)]; };
        return std::vector<kl::Expr>{kl::cast(pick(xa), acc_a), kl::cast(pick(xb), acc_b)};
      },
      [&](std::span<const kl::Expr> red, std::span<const kl::Expr>, std::span<const kl::Expr> sc) {
        const kl::Expr ya = na >= 0 ? red[0] / sc[size_t(na)] : red[0];
        const kl::Expr yb = nb >= 0 ? red[1] / sc[size_t(nb)] : red[1];
        return std::vector<kl::Expr>{kl::cast(ya, out_a), kl::cast(yb, out_b)};
      });
  r.stores = {ta.outputs[0], tb.outputs[0]};
  a = std::move(r);
  return true;
}

}  // namespace ember::fusion

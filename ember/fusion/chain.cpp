#include "ember/fusion/chain.h"

#include "ember/error.h"
#include "ember/kl/random.h"
#include "ember/kl/trace_op.h"
#include "ember/ops/nn_common.h"

namespace ember::fusion {

std::vector<int64_t> strides_over(const Tensor& t, const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 0);
  const size_t off = shape.size() - size_t(t.dim());
  for (size_t d = off; d < shape.size(); ++d)
    if (t.size(int64_t(d - off)) != 1) s[d] = t.stride(int64_t(d - off));
  return s;
}

bool random_node(const Node& n) {
  return n.op == OpId::bernoulli && n.attrs.b[0] && n.inputs.size() == 1 && n.meta.n == 1 &&
         is_floating(n.meta.m[0].dtype);
}

DType compute_of(const Node& n) {
  std::vector<DType> in;
  for (const NodeInput& i : n.inputs) in.push_back(i.defined ? i.dtype : DType::F32);
  return kl::compute_dtype(n.op, in, n.meta);
}

int32_t Operands::add_tensor(const std::vector<Node>& nodes, int32_t ni, int32_t j,
                             const Shape& shape) {
  const Tensor& t = nodes[size_t(ni)].inputs[size_t(j)].tensor;
  for (size_t q = 0; q < inputs.size(); ++q)
    if (inputs[q].node >= 0 &&
        nodes[size_t(inputs[q].node)].inputs[size_t(inputs[q].input)].tensor.impl() == t.impl())
      return int32_t(q);
  inputs.push_back({ni, j, -1});
  in_dtypes.push_back(t.dtype());
  strides.push_back(strides_over(t, shape));
  return int32_t(inputs.size() - 1);
}

int32_t Operands::add_value(int32_t v, const std::vector<Node>& nodes,
                            const std::vector<Value>& values, const Shape& shape) {
  for (size_t q = 0; q < inputs.size(); ++q)
    if (inputs[q].value == v) return int32_t(q);
  inputs.push_back({-1, -1, v});
  const Value& val = values[size_t(v)];
  const TensorMeta& m = nodes[size_t(val.node)].meta.m[val.out];
  in_dtypes.push_back(m.dtype);
  // Contiguous in its own shape, broadcast over the kernel's.
  std::vector<int64_t> s(shape.size(), 0);
  const Shape cs = contiguous_strides(m.shape);
  const size_t off = shape.size() - m.shape.size();
  for (size_t d = off; d < shape.size(); ++d)
    if (m.shape[d - off] != 1) s[d] = cs[d - off];
  strides.push_back(std::move(s));
  return int32_t(inputs.size() - 1);
}

int32_t Operands::add_scalar(ScalarSource s, DType d) {
  scalars.push_back(std::move(s));
  scalar_dtypes.push_back(d);
  return int32_t(scalars.size() - 1);
}

std::vector<Scalar> Operands::scalar_values(const std::vector<Node>& nodes) const {
  std::vector<Scalar> out;
  out.reserve(scalars.size());
  for (const ScalarSource& s : scalars) {
    switch (s.kind) {
      case ScalarSource::Kind::Fixed: out.push_back(s.fixed); break;
      case ScalarSource::Kind::Constant:
        out.push_back(nodes[size_t(s.node)].inputs[size_t(s.index)].tensor.impl()->constant);
        break;
      case ScalarSource::Kind::Eps: {
        const Node& n = nodes[size_t(s.node)];
        const bool rms = n.op == OpId::rms_norm || n.op == OpId::rms_norm_backward;
        out.push_back(rms ? ops::rms_norm_eps(n.attrs, n.inputs[0].dtype) : n.attrs.f[0]);
        break;
      }
      case ScalarSource::Kind::Philox: {
        const Node& n = nodes[size_t(s.node)];
        if (s.index == 2) out.push_back(Scalar(n.attrs.f[0]));
        else out.push_back(Scalar(int64_t(s.index == 0 ? n.attrs.seed : n.attrs.offset)));
        break;
      }
      case ScalarSource::Kind::OpScalar: {
        const Node& n = nodes[size_t(s.node)];
        out.push_back(kl::op_scalars(n.op, n.attrs, compute_of(n))[size_t(s.index)]);
        break;
      }
    }
  }
  return out;
}

void Operands::buffers(const std::vector<Node>& nodes, const std::vector<Tensor>& vals,
                       std::vector<const void*>& out) const {
  for (const MemOperand& m : inputs) {
    const Tensor& t = m.value >= 0 ? vals[size_t(m.value)]
                                   : nodes[size_t(m.node)].inputs[size_t(m.input)].tensor;
    out.push_back(t.impl()->data());
  }
}

bool Chain::positional(const std::vector<Node>& all) const {
  for (int32_t ni : nodes)
    if (random_node(all[size_t(ni)])) return true;
  return false;
}

bool Chain::makes(const std::vector<Node>& all, int32_t v) const {
  for (int32_t ni : nodes)
    for (int32_t o : all[size_t(ni)].outputs)
      if (o == v) return true;
  return false;
}

void Chain::collect(Operands& ops, const std::vector<Node>& all, const std::vector<Value>& values,
                    const Shape& shape) {
  slot.assign(nodes.size(), {});
  value_in.assign(nodes.size(), {});
  first_scalar.assign(nodes.size(), 0);
  compute.assign(nodes.size(), DType::F32);
  std::vector<char> mine(values.size(), 0);
  for (int32_t ni : nodes)
    for (int32_t v : all[size_t(ni)].outputs) mine[size_t(v)] = 1;
  for (size_t gi = 0; gi < nodes.size(); ++gi) {
    const int32_t ni = nodes[gi];
    const Node& n = all[size_t(ni)];
    first_scalar[gi] = int32_t(ops.scalars.size());
    if (n.target.defined()) continue;  // an in-place copy: a store of the group
    if (random_node(n)) {
      // Its input only gives the shape: nothing is read; the draw's state is three scalars.
      compute[gi] = n.meta.m[0].dtype;
      slot[gi].push_back(-1);
      value_in[gi].push_back(-1);
      for (int32_t k = 0; k < 3; ++k) {
        ScalarSource s;
        s.kind = ScalarSource::Kind::Philox;
        s.node = ni;
        s.index = k;
        ops.add_scalar(s, k == 2 ? DType::F64 : DType::I64);
      }
      continue;
    }
    compute[gi] = compute_of(n);
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      const NodeInput& in = n.inputs[j];
      int32_t fwd = -1;
      for (const Forward& f : forwards)
        if (f.node == ni && f.input == int32_t(j)) fwd = f.value;
      value_in[gi].push_back(fwd >= 0 ? fwd : in.value);
      if (fwd >= 0 || (in.value >= 0 && mine[size_t(in.value)])) {
        slot[gi].push_back(-1);
      } else if (in.value >= 0) {
        slot[gi].push_back(ops.add_value(in.value, all, values, shape));
      } else if (!in.tensor.defined()) {
        slot[gi].push_back(-1);
      } else if (in.tensor.impl()->is_constant) {
        ScalarSource s;
        s.kind = ScalarSource::Kind::Constant;
        s.node = ni;
        s.index = int32_t(j);
        slot[gi].push_back(-2 - ops.add_scalar(s, in.tensor.dtype()));
      } else {
        slot[gi].push_back(ops.add_tensor(all, ni, int32_t(j), shape));
      }
    }
    first_scalar[gi] = int32_t(ops.scalars.size());
    const std::vector<Scalar> sc = kl::op_scalars(n.op, n.attrs, compute[gi]);
    for (size_t k = 0; k < sc.size(); ++k) {
      ScalarSource s;
      s.node = ni;
      s.index = int32_t(k);
      ops.add_scalar(s, kl::eval_dtype(compute[gi]));
    }
  }
}

std::vector<kl::Expr> Chain::trace(const std::vector<Node>& all, size_t nvalues,
                                   std::span<const kl::Expr> loaded, std::span<const kl::Expr> sc,
                                   const kl::Expr& pos) const {
  std::vector<kl::Expr> val(nvalues);
  for (size_t gi = 0; gi < nodes.size(); ++gi) {
    const Node& n = all[size_t(nodes[gi])];
    if (n.target.defined()) continue;
    if (random_node(n)) {
      if (!pos.valid())
        detail::throw_value("fusion", "expected the elements' positions for a random node, found "
                                      "none (a random chain in a template without them)");
      const size_t f = size_t(first_scalar[gi]);
      const kl::Expr keep = kl::bernoulli_keep(sc[f], sc[f + 1], pos, sc[f + 2]);
      // flex writes T(keep ? 1 : 0): exact in every float dtype.
      val[size_t(n.outputs[0])] = kl::cast(keep, n.meta.m[0].dtype);
      continue;
    }
    std::vector<kl::Expr> ins;
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      const int32_t s = slot[gi][j];
      if (s >= 0) ins.push_back(loaded[size_t(s)]);
      else if (s <= -2) ins.push_back(sc[size_t(-2 - s)]);
      else if (value_in[gi][j] >= 0) ins.push_back(val[size_t(value_in[gi][j])]);
      else ins.emplace_back();
    }
    const size_t ns = kl::op_scalars(n.op, n.attrs, compute[gi]).size();
    std::span<const kl::Expr> mine = sc.subspan(size_t(first_scalar[gi]), ns);
    val[size_t(n.outputs[0])] = kl::pointwise(n.op, n.attrs, ins, mine, compute[gi], n.meta.m[0].dtype);
  }
  return val;
}

}  // namespace ember::fusion

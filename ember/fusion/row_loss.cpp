// Cross-entropy's forward as one row kernel: a log_softmax over the class dim read by an
// nll_loss (class-index targets). Per row the kernel reduces the online-softmax pair, the
// target's logit and weight, and writes the row's loss and weight; a second kernel adds the rows
// up (the loss for mean and sum, the weights). The log-probabilities reach memory only when
// something else needs them (under autodiff the tape keeps them for the backward): the kernel
// then writes them too, in the same pass that writes the row's loss.
#include <exception>
#include <memory>

#include "ember/error.h"
#include "ember/fusion/row.h"
#include "ember/kl/render.h"
#include "ember/ops/common.h"
#include "ember/ops/modes.h"

namespace ember::fusion {
namespace {

// Element strides over `shape` (x's) of an operand whose dims are x's without the class dim
// `cd` (the target), laid out with `own` strides: 0 along the class dim.
std::vector<int64_t> without_class(std::span<const int64_t> own, size_t rank, int64_t cd) {
  std::vector<int64_t> s(rank, 0);
  for (size_t d = 0, k = 0; d < rank; ++d)
    if (int64_t(d) != cd) s[d] = own[k++];
  return s;
}

const Shape& value_shape(int32_t v, const std::vector<Node>& nodes,
                         const std::vector<Value>& values) {
  const Value& val = values[size_t(v)];
  return nodes[size_t(val.node)].meta.m[val.out].shape;
}

}  // namespace

bool build_row_loss(RowGroup& g, int32_t nll, bool keep, const std::vector<Node>& nodes,
                    const std::vector<Value>& values, const kl::Target& target) {
  const Node& t = nodes[size_t(g.tail)];
  const Node& n = nodes[size_t(nll)];
  if (t.op != OpId::log_softmax || n.op != OpId::nll_loss || g.split > 1 || !g.side.empty() ||
      !g.epilogue.empty() || g.loss || n.target.defined() || n.meta.n != 2)
    return false;
  const int64_t rank = int64_t(g.shape.size());
  if (rank < 1) return false;
  const int64_t cd = rank == 1 ? 0 : 1;
  if (row_reduced_dims(t, rank) != Shape{cd}) return false;
  const DType xd = t.meta.m[0].dtype;
  if ((xd != DType::F32 && xd != DType::F64) || t.inputs[0].dtype != xd) return false;
  const DType acc = xd;
  if (n.inputs.size() < 2 || n.inputs[0].value != t.outputs[0] || !n.inputs[1].defined)
    return false;
  const NodeInput& tg = n.inputs[1];
  if (tg.dtype != DType::I64 && tg.dtype != DType::I32) return false;
  const bool has_w = n.inputs.size() > 2 && n.inputs[2].defined;
  if (has_w && (n.inputs[2].dtype != xd || n.inputs[2].value == t.outputs[0])) return false;
  for (size_t j = 1; j < n.inputs.size(); ++j)
    if (n.inputs[j].value < 0 && n.inputs[j].defined && n.inputs[j].tensor.impl()->is_constant)
      return false;

  RowGroup r;
  r.chain.nodes = g.chain.nodes;
  r.tail = g.tail;
  r.shape = g.shape;
  r.loss = true;
  const bool x_in_chain = collect_prologue(r, nodes, values);
  // The target, one per row (stride 0 along the classes), and the class weights along the row.
  auto add = [&](MemOperand m, DType d, std::vector<int64_t> st) {
    r.ops.inputs.push_back(m);
    r.ops.in_dtypes.push_back(d);
    r.ops.strides.push_back(std::move(st));
    return int32_t(r.ops.inputs.size() - 1);
  };
  const size_t urank = size_t(rank);
  int32_t t_slot;
  if (tg.value >= 0) {
    const Shape cs = contiguous_strides(value_shape(tg.value, nodes, values));
    t_slot = add({-1, -1, tg.value}, tg.dtype, without_class(cs, urank, cd));
  } else {
    const Shape& st = tg.tensor.impl()->strides;
    t_slot = add({nll, 1, -1}, tg.dtype, without_class(st, urank, cd));
  }
  int32_t w_slot = -1;
  if (has_w) {
    const NodeInput& w = n.inputs[2];
    std::vector<int64_t> st(urank, 0);
    st[size_t(cd)] = w.value >= 0 ? 1 : w.tensor.impl()->strides[0];
    w_slot = w.value >= 0 ? add({-1, -1, w.value}, w.dtype, st) : add({nll, 2, -1}, w.dtype, st);
  }
  r.prologue_inputs = int(r.ops.inputs.size());
  ScalarSource ign;
  ign.kind = ScalarSource::Kind::Fixed;
  ign.fixed = Scalar(int64_t(n.attrs.i[0]));
  const int32_t ign_scalar = r.ops.add_scalar(ign, DType::I64);
  ScalarSource ncls;
  ncls.kind = ScalarSource::Kind::Fixed;
  ncls.fixed = Scalar(int64_t(g.shape[size_t(cd)]));
  const int32_t classes_scalar = r.ops.add_scalar(ncls, DType::I64);

  // Two per-row outputs in x's dtype: the row's loss and weight; then the log-probabilities
  // (full shape) when kept.
  std::vector<std::vector<int64_t>> strides = r.ops.strides;
  Shape kept = r.shape;
  kept[size_t(cd)] = 1;
  const Shape ks = contiguous_strides(kept);
  std::vector<int64_t> os(ks.begin(), ks.end());
  os[size_t(cd)] = 0;
  strides.push_back(os);
  strides.push_back(os);
  std::vector<DType> out_dtypes{acc, acc};
  if (keep) {
    const Shape cs = contiguous_strides(r.shape);
    strides.emplace_back(cs.begin(), cs.end());
    out_dtypes.push_back(xd);
  }
  try {
    r.layout = kl::row_layout(std::span<const int64_t>(r.shape.data(), r.shape.size()), strides,
                              std::span<const int64_t>(&cd, 1));
  } catch (const ValueError&) {
    return false;
  }
  std::vector<kl::Reduction> reds{{kl::Combiner::Softmax, acc},
                                  {kl::Combiner::Sum, acc},   // the target's logit
                                  {kl::Combiner::Sum, acc}};  // 1 where the target counts
  if (has_w) reds.push_back({kl::Combiner::Sum, acc});        // its weight
  r.key = kl::row_reduce_key(r.layout, r.ops.in_dtypes, r.prologue_inputs, reds, out_dtypes, keep,
                             r.ops.scalar_dtypes, target);
  r.key.status = true;  // a target out of range
  const size_t nvalues = values.size();
  const int32_t xv = x_in_chain ? t.inputs[0].value : -1;
  const RowGroup& rr = r;
  auto logit = [&](std::span<const kl::Expr> in, std::span<const kl::Expr> sc) {
    return xv < 0 ? kl::cast(in[size_t(rr.x_slot)], acc)
                  : kl::cast(rr.chain.trace(nodes, nvalues, in, sc)[size_t(xv)], acc);
  };
  r.code.kernel = kl::row_reduce_kernel_at(
      "k", r.key,
      [&](std::span<const kl::Expr> in, std::span<const kl::Expr> sc, const kl::Expr& pos) {
        const kl::Expr x = logit(in, sc);
        const kl::Expr cls = kl::cast(in[size_t(t_slot)], DType::I64);
        const kl::Expr hit = pos == cls && cls != sc[size_t(ign_scalar)];
        const kl::Expr zero = kl::lit(x, 0);
        std::vector<kl::Expr> v{x, kl::select(hit, x, zero), kl::select(hit, kl::lit(x, 1), zero)};
        if (w_slot >= 0) v.push_back(kl::select(hit, kl::cast(in[size_t(w_slot)], acc), zero));
        const kl::Expr ignored = cls == sc[size_t(ign_scalar)];
        v.push_back(!ignored && (cls < kl::lit(cls, 0) || cls >= sc[size_t(classes_scalar)]));
        v.push_back(cls);
        return v;
      },
      [&](std::span<const kl::Expr> red, std::span<const kl::Expr> in,
          std::span<const kl::Expr> sc) {
        // red: max, sum of exp, the target's logit, its count (0 or 1), its weight.
        const kl::Expr logp = red[2] - red[0] - kl::log(red[1]);
        const kl::Expr w = w_slot >= 0 ? red[4] : red[3];
        const kl::Expr l = kl::select(red[3] > kl::lit(red[3], 0), -w * logp, kl::lit(logp, 0));
        std::vector<kl::Expr> outs{l, w};
        // As log_softmax's own row kernel writes it (build_row).
        if (keep) outs.push_back(logit(in, sc) - red[0] - kl::log(red[1]));
        return outs;
      });
  // The finish: over the rows, the loss's sum (mean: divided by the weights') and the weights'.
  const bool none = ops::Reduction(n.attrs.mode) == ops::Reduction::None,
             mean = ops::Reduction(n.attrs.mode) == ops::Reduction::Mean;
  const int64_t rows = r.layout.rows();
  const int64_t zero = 0;
  std::vector<std::vector<int64_t>> fs(none ? 1 : 2, std::vector<int64_t>{1});
  fs.resize(fs.size() * 2, std::vector<int64_t>{0});
  r.finish_layout = kl::row_layout(std::span<const int64_t>(&rows, 1), fs,
                                   std::span<const int64_t>(&zero, 1));
  std::vector<DType> fin(none ? 1 : 2, acc);
  std::vector<kl::Reduction> fred(fin.size(), {kl::Combiner::Sum, acc});
  r.finish_key = kl::row_reduce_key(r.finish_layout, fin, int(fin.size()), fred, fin, false, {},
                                    target);
  r.finish.kernel = kl::row_reduce_kernel(
      "k", r.finish_key,
      [](std::span<const kl::Expr> in, std::span<const kl::Expr>) {
        return std::vector<kl::Expr>(in.begin(), in.end());
      },
      [none, mean](std::span<const kl::Expr> red, std::span<const kl::Expr>,
                   std::span<const kl::Expr>) {
        if (none) return std::vector<kl::Expr>{red[0]};
        return std::vector<kl::Expr>{mean ? red[0] / red[1] : red[0], red[1]};
      });
  r.stores = n.outputs;
  if (keep) r.stores.push_back(t.outputs[0]);
  r.epilogue = {nll};
  g = std::move(r);
  return true;
}

void launch_row_loss(const RowGroup& g, const std::vector<Node>& nodes,
                     const std::vector<Tensor>& vals, Executor& exec, Device place) {
  const Node& n = nodes[size_t(g.epilogue[0])];
  const int64_t classes = g.shape[g.shape.size() == 1 ? 0 : 1];
  const bool none = ops::Reduction(n.attrs.mode) == ops::Reduction::None;
  const DType acc = row_acc(nodes[size_t(g.tail)]);
  const Device here = n.device.without_layers();
  const int64_t rows = g.layout.rows();
  const Tensor& out = vals[size_t(g.stores[0])];
  const Tensor& total = vals[size_t(g.stores[1])];
  // Per row: the loss (none: the output itself) and the weight.
  Tensor loss = none ? Tensor() : detail::empty_tensor({rows}, acc, here);
  Tensor weight = detail::empty_tensor({rows}, acc, here);
  void* loss_rows = none ? out.impl()->data() : loss.impl()->data();
  std::vector<const void*> bufs;
  g.ops.buffers(nodes, vals, bufs);
  bufs.push_back(loss_rows);
  bufs.push_back(weight.impl()->data());
  // The log-probabilities, when kept, are the third output.
  const bool kept = g.stores.size() > 2;
  if (kept) bufs.push_back(vals[size_t(g.stores[2])].impl()->data());
  // A target out of range fails as nll_loss's own check does, named after the op the program
  // called (cross_entropy), as a failed flush names it (the device may report it later).
  // What the kernels wrote is poisoned, as a failed flush's outputs are.
  const char* op = n.origin ? n.origin : "nll_loss";
  std::vector<std::weak_ptr<Storage>> written{out.impl()->storage, total.impl()->storage};
  if (kept) written.push_back(vals[size_t(g.stores[2])].impl()->storage);
  bufs.push_back(exec.status_word(place, [classes, op, written](int32_t, int64_t target) {
    std::exception_ptr e;
    try {
      detail::throw_index(op, "target " + std::to_string(target) + " is out of bounds for " +
                                  std::to_string(classes) + " classes");
    } catch (...) {
      e = std::current_exception();
    }
    poison_storages(written, e);
    std::rethrow_exception(e);
  }));
  const std::vector<Scalar> scalars = g.ops.scalar_values(nodes);
  const kl::ArgPack args = kl::row_reduce_args(g.code.kernel, g.key, g.layout, bufs, scalars);
  exec.launch(place, g.code.kernel, g.code.handle.get().fns[size_t(g.code.fn)], args,
              kl::row_reduce_items(g.key, g.layout), kl::row_reduce_grain(g.key, g.layout),
              "nll_loss");
  std::vector<const void*> fin;
  if (!none) fin.push_back(loss.impl()->data());
  fin.push_back(weight.impl()->data());
  if (!none) fin.push_back(out.impl()->data());
  fin.push_back(total.impl()->data());
  const kl::ArgPack fargs =
      kl::row_reduce_args(g.finish.kernel, g.finish_key, g.finish_layout, fin, {});
  exec.launch(place, g.finish.kernel, g.finish.handle.get().fns[size_t(g.finish.fn)], fargs,
              kl::row_reduce_items(g.finish_key, g.finish_layout),
              kl::row_reduce_grain(g.finish_key, g.finish_layout), "nll_loss");
}

}  // namespace ember::fusion

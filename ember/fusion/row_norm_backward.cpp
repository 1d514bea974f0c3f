// The backward of layer_norm and rms_norm (their *_backward ops) as one row kernel per norm. In
// one pass over a row it reduces what the closed form needs, and in the epilogue pass writes dx
// (and xhat, when the affine gradients read it):
//   layer_norm: Welford(x) -> mean, var; sum(gy); sum(gy * x), with gy = g * w, and
//     mean(gy * xhat) = rstd * (mean(gy * x) - mean * mean(gy)),
//     dx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat));
//   rms_norm: sum(x^2) -> r = rsqrt(mean(x^2) + eps); sum(gy * x), mean(gy * xhat) = r * mean(gy *
//   x),
//     dx = r * (gy - xhat * mean(gy * xhat)).
// Nothing per row reaches memory (the eager form stores xhat, rstd, gy, gy * xhat and two
// means). layer_norm's one-pass identity cancels where |mean| >> std: its error grows like
// |mean| / std ulps of the accumulation dtype (float32 for float32 and the half types).
#include "ember/error.h"
#include "ember/fusion/row.h"
#include "ember/kl/render.h"

namespace ember::fusion {

bool norm_backward_node(const Node& n) {
  if ((n.op != OpId::layer_norm_backward && n.op != OpId::rms_norm_backward) ||
      n.target.defined() || n.meta.n != 2 || n.inputs.size() != 3)
    return false;
  for (size_t j = 0; j < 3; ++j) {
    const NodeInput& in = n.inputs[j];
    if (!in.defined) {
      if (j != 1) return false;
      continue;
    }
    if (!is_floating(in.dtype) || (in.value < 0 && in.tensor.impl()->is_constant)) return false;
  }
  return true;
}

bool build_row_norm_backward(RowGroup& g, bool want_xhat, const std::vector<Node>& nodes,
                             const std::vector<Value>& values, const kl::Target& target) {
  const Node& t = nodes[size_t(g.tail)];
  const bool layer = t.op == OpId::layer_norm_backward;
  const int64_t rank = int64_t(g.shape.size());
  const int64_t numel = numel_of(g.shape);
  const Shape dims = row_reduced_dims(t, rank);
  int64_t row = 1;
  for (int64_t d : dims) row *= g.shape[size_t(d)];
  if (numel == 0 || row == 0) return false;
  const DType acc = row_acc(t);
  const DType dx_dtype = t.meta.m[0].dtype, xhat_dtype = t.meta.m[1].dtype;
  g.broadcast_back = true;
  auto operand = [&](int32_t j) {
    const NodeInput& in = t.inputs[size_t(j)];
    if (!in.defined) return int32_t(-1);
    return in.value >= 0 ? g.ops.add_value(in.value, nodes, values, g.shape)
                         : g.ops.add_tensor(nodes, g.tail, j, g.shape);
  };
  const int32_t x_slot = operand(0), w_slot = operand(1), g_slot = operand(2);
  g.prologue_inputs = int(g.ops.inputs.size());
  ScalarSource n;
  n.kind = ScalarSource::Kind::Fixed;
  n.fixed = acc == DType::F64 ? Scalar(double(row)) : Scalar(double(float(row)));
  const int32_t n_scalar = g.ops.add_scalar(n, acc);
  ScalarSource eps;
  eps.kind = ScalarSource::Kind::Eps;
  eps.node = g.tail;
  const int32_t eps_scalar = g.ops.add_scalar(eps, acc);

  std::vector<std::vector<int64_t>> strides = g.ops.strides;
  const Shape cs = contiguous_strides(g.shape);
  std::vector<DType> out_dtypes{dx_dtype};
  strides.emplace_back(cs.begin(), cs.end());
  if (want_xhat) {
    out_dtypes.push_back(xhat_dtype);
    strides.emplace_back(cs.begin(), cs.end());
  }
  try {
    g.layout = kl::row_layout(std::span<const int64_t>(g.shape.data(), g.shape.size()), strides,
                              std::span<const int64_t>(dims.data(), dims.size()));
  } catch (const ValueError&) {
    return false;
  }
  std::vector<kl::Reduction> reds;
  if (layer)
    reds.push_back({kl::Combiner::Welford, acc});
  else
    reds.push_back({kl::Combiner::Sum, acc});           // x^2
  if (layer) reds.push_back({kl::Combiner::Sum, acc});  // gy
  reds.push_back({kl::Combiner::Sum, acc});             // gy * x
  g.key = kl::row_reduce_key(g.layout, g.ops.in_dtypes, g.prologue_inputs, reds, out_dtypes, true,
                             g.ops.scalar_dtypes, target);
  // x and gy = g * w at an element, in the accumulation dtype.
  auto x_at = [=](std::span<const kl::Expr> in) { return kl::cast(in[size_t(x_slot)], acc); };
  auto gy_at = [=](std::span<const kl::Expr> in) {
    const kl::Expr gv = kl::cast(in[size_t(g_slot)], acc);
    return w_slot >= 0 ? gv * kl::cast(in[size_t(w_slot)], acc) : gv;
  };
  g.code.kernel = kl::row_reduce_kernel(
      "k", g.key,
      [=](std::span<const kl::Expr> in, std::span<const kl::Expr>) {
        const kl::Expr x = x_at(in), gy = gy_at(in);
        if (layer) return std::vector<kl::Expr>{x, gy, gy * x};
        return std::vector<kl::Expr>{x * x, gy * x};
      },
      [=](std::span<const kl::Expr> r, std::span<const kl::Expr> in, std::span<const kl::Expr> sc) {
        const kl::Expr x = x_at(in), gy = gy_at(in);
        const kl::Expr nn = sc[size_t(n_scalar)], e = sc[size_t(eps_scalar)];
        kl::Expr xhat, dx;
        if (layer) {
          // r: mean, M2, count (Welford), sum(gy), sum(gy * x). xhat as layer_norm writes it.
          const kl::Expr s = kl::sqrt(r[1] / kl::cast(r[2], acc) + e);
          const kl::Expr rstd = kl::lit(s, 1) / s;
          xhat = (x - r[0]) / s;
          // The eager form takes xhat from layer_norm itself, rounded to x's dtype.
          if (dx_dtype != acc) xhat = kl::cast(kl::cast(xhat, dx_dtype), acc);
          const kl::Expr mg = r[3] / nn;
          const kl::Expr mgx = rstd * (r[4] / nn - r[0] * mg);
          dx = rstd * (gy - mg - xhat * mgx);
        } else {
          // r: sum(x^2), sum(gy * x).
          const kl::Expr rs = kl::lit(r[0], 1) / kl::sqrt(r[0] / nn + e);
          xhat = x * rs;
          dx = rs * (gy - xhat * (rs * (r[1] / nn)));
        }
        std::vector<kl::Expr> outs{kl::cast(dx, dx_dtype)};
        if (want_xhat) outs.push_back(kl::cast(xhat, xhat_dtype));
        return outs;
      });
  g.stores = {t.outputs[0]};
  if (want_xhat) g.stores.push_back(t.outputs[1]);
  return true;
}

}  // namespace ember::fusion

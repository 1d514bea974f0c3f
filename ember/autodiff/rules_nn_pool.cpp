// VJP rules: pooling and interpolation.
// Max pooling scatters the cotangent back through the argmax indices. Average pooling, adaptive
// average pooling and interpolation are separable linear maps: along each spatial axis, output o
// is a weighted sum of a few inputs i. Their gradient applies each axis map's transpose (a small
// matrix product, or a gather, multiply and index_add), which is linear in the cotangent and so
// differentiates again.
#include <cmath>
#include <optional>

#include "ember/autodiff/rules.h"
#include "ember/ops/interpolate_taps.h"
#include "ember/ops/nn_common.h"

namespace ember::autodiff {
namespace {

// One axis of a separable linear map: out[o[p]] += w[p] * in[i[p]] for every pair p.
struct AxisMap {
  int64_t in = 0, out = 0;
  std::vector<int64_t> o, i;
  std::vector<double> w;
  void add(int64_t oo, int64_t ii, double ww) {
    o.push_back(oo);
    i.push_back(ii);
    w.push_back(ww);
  }
  bool identity() const {
    if (in != out || int64_t(o.size()) != out) return false;
    for (size_t p = 0; p < o.size(); ++p)
      if (o[p] != int64_t(p) || i[p] != int64_t(p) || w[p] != 1) return false;
    return true;
  }
};

// m as a dense [out, in] matrix (transposed: [in, out]), duplicate pairs summed.
Tensor dense_map(const AxisMap& m, bool transposed, const Tensor& like) {
  std::vector<double> d(size_t(m.in * m.out), 0.0);
  for (size_t p = 0; p < m.o.size(); ++p)
    d[size_t(transposed ? m.i[p] * m.out + m.o[p] : m.o[p] * m.in + m.i[p])] += m.w[p];
  return tensor(d, transposed ? Shape{m.in, m.out} : Shape{m.out, m.in}, like.dtype(),
                like.device());
}

// The transpose of `m` applied along `dim` of t (size m.out there; the result has m.in).
// Along the last two dims a GEMM with the dense matrix beats gather + index_add on flex (3-5x
// at 64 -> 128, still even at 256 -> 512: index ops along the last dim move single elements);
// the sparse form serves maps too large to hold densely.
Tensor apply_transpose(const Tensor& t, int64_t dim, const AxisMap& m) {
  if (m.identity()) return t;
  Shape s = t.shape();
  s[size_t(dim)] = m.in;
  const TensorOptions opts{t.dtype(), t.device()};
  if (m.o.empty() || t.numel() == 0) return zeros(s, opts);
  constexpr int64_t kMaxDense = int64_t(1) << 20;
  if (m.in * m.out <= kMaxDense && dim >= t.dim() - 2) {
    if (dim == t.dim() - 1) return mm(t.reshape({-1, m.out}), dense_map(m, false, t)).reshape(s);
    return matmul(dense_map(m, true, t), t);
  }
  const int64_t pairs = int64_t(m.o.size());
  Shape ws(size_t(t.dim()), 1);
  ws[size_t(dim)] = pairs;
  const Tensor src = index_select(t, dim, tensor(m.o, {pairs}, DType::I64, t.device())) *
                     tensor(m.w, ws, t.dtype(), t.device());
  return index_add(zeros(s, opts), dim, tensor(m.i, {pairs}, DType::I64, t.device()), src);
}

// The cotangent of an [.., H, W] (or [.., L]) output through per-axis maps, last axis first.
Tensor apply_spatial(Tensor g, const std::vector<AxisMap>& maps) {
  const int64_t nd = int64_t(maps.size());
  for (int64_t k = nd; k-- > 0;) g = apply_transpose(g, g.dim() - nd + k, maps[size_t(k)]);
  return g;
}

// --- max pooling ---

TensorList vjp_max_pool(const VjpCtx& c) {
  if (!c.needs_grad(0)) return {Tensor()};
  const Tensor& x = c.input(0);
  const int64_t nd = c.op == OpId::adaptive_max_pool2d || c.op == OpId::max_pool2d ? 2 : 1;
  Tensor idx;
  if (c.outputs.size() > 1) {
    idx = c.output(1);
  } else {  // the call did not ask for indices: find them again
    Attrs a = c.attrs;
    a.b[1] = true;
    idx = dispatch(c.op, a, {x})[1];
  }
  if (x.numel() == 0) return {zeros_like(x)};
  // Indices address each flattened [H*W] (or [L]) plane.
  const int64_t lead = x.dim() - nd;
  Shape planes(std::span<const int64_t>(x.shape().data(), size_t(lead)));
  planes.push_back(x.numel() / std::max<int64_t>(1, numel_of(planes)));
  const Tensor z = zeros(planes, {x.dtype(), x.device()});
  const Tensor gf = c.grad(0).flatten(lead);
  return {scatter_add(z, -1, idx.flatten(lead), gf).reshape(x.shape())};
}

// --- average pooling ---

AxisMap avg_axis(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, bool include_pad) {
  AxisMap m{in, out, {}, {}, {}};
  for (int64_t o = 0; o < out; ++o) {
    // As the kernel: the window may hang into the padding (counted when include_pad).
    const int64_t h0 = o * s - p, h1 = std::min(h0 + k, in + p);
    const int64_t c0 = std::max<int64_t>(h0, 0), c1 = std::min(h1, in);
    const double n = double(include_pad ? h1 - h0 : c1 - c0);
    for (int64_t i = c0; i < c1; ++i) m.add(o, i, 1.0 / n);
  }
  return m;
}

TensorList vjp_avg_pool(const VjpCtx& c) {
  if (!c.needs_grad(0)) return {Tensor()};
  const Tensor &x = c.input(0), &g = c.grad(0);
  const int nd = c.op == OpId::avg_pool2d ? 2 : 1;
  const ops::PoolParams p = ops::pool_params(op_name(c.op), c.attrs, nd, false);
  const bool include_pad = c.attrs.b[1];
  std::vector<AxisMap> maps;
  if (nd == 2) maps.push_back(avg_axis(x.size(-2), g.size(-2), p.kh, p.sh, p.ph, include_pad));
  maps.push_back(avg_axis(x.size(-1), g.size(-1), p.kw, p.sw, p.pw, include_pad));
  return {apply_spatial(g, maps)};
}

AxisMap adaptive_axis(int64_t in, int64_t out) {
  AxisMap m{in, out, {}, {}, {}};
  for (int64_t o = 0; o < out; ++o) {
    const int64_t s = ops::adaptive_start(o, in, out), e = ops::adaptive_end(o, in, out);
    for (int64_t i = s; i < e; ++i) m.add(o, i, 1.0 / double(e - s));
  }
  return m;
}

TensorList vjp_adaptive_avg_pool(const VjpCtx& c) {
  if (!c.needs_grad(0)) return {Tensor()};
  const Tensor &x = c.input(0), &g = c.grad(0);
  std::vector<AxisMap> maps;
  if (c.op == OpId::adaptive_avg_pool2d) maps.push_back(adaptive_axis(x.size(-2), g.size(-2)));
  maps.push_back(adaptive_axis(x.size(-1), g.size(-1)));
  return {apply_spatial(g, maps)};
}

// --- interpolate: the adjoint of the taps the flex kernel used (ember/ops/interpolate_taps.h) ---

template <class C>
AxisMap interp_axis(ops::InterpMode mode, int64_t in, int64_t out, bool align,
                    std::optional<double> scale) {
  AxisMap m{in, out, {}, {}, {}};
  const ops::Taps<C> t = ops::make_taps<C>(mode, in, out, align, scale);
  for (int64_t o = 0; o < out; ++o)
    for (int j = 0; j < t.k; ++j)
      m.add(o, t.idx[size_t(o * t.k + j)], double(t.wt[size_t(o * t.k + j)]));
  return m;
}

TensorList vjp_interpolate(const VjpCtx& c) {
  if (!c.needs_grad(0)) return {Tensor()};
  const Tensor &x = c.input(0), &g = c.grad(0);
  const Attrs& a = c.attrs;
  const bool two_d = x.dim() == 4;
  std::optional<double> sh, sw;
  if (a.b[0]) {  // scale factors, when given, reach the index maths
    sw = a.f[size_t(a.i[0] == 1 ? 0 : (two_d ? 1 : 0))];
    if (two_d) sh = a.f[0];
  }
  auto axis = [&](int64_t in, int64_t out, std::optional<double> scale) {
    return x.dtype() == DType::F64 ? interp_axis<double>(ops::InterpMode(a.mode), in, out, a.b[1], scale)
                                   : interp_axis<float>(ops::InterpMode(a.mode), in, out, a.b[1], scale);
  };
  std::vector<AxisMap> maps;
  if (two_d) maps.push_back(axis(x.size(-2), g.size(-2), sh));
  maps.push_back(axis(x.size(-1), g.size(-1), sw));
  return {apply_spatial(g, maps)};
}

}  // namespace

void register_rules_nn_pool() {
  for (OpId op : {OpId::max_pool1d, OpId::max_pool2d, OpId::adaptive_max_pool2d})
    set_vjp(op, vjp_max_pool);
  for (OpId op : {OpId::avg_pool1d, OpId::avg_pool2d}) set_vjp(op, vjp_avg_pool);
  for (OpId op : {OpId::adaptive_avg_pool1d, OpId::adaptive_avg_pool2d})
    set_vjp(op, vjp_adaptive_avg_pool);
  set_vjp(OpId::interpolate, vjp_interpolate);
}

}  // namespace ember::autodiff

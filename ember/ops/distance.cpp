// Similarities and distances: cosine_similarity, pairwise_distance, cdist. API, inference,
// decompositions (into ember ops), registration.
// Attrs: cosine_similarity: i[0] dim, f[0] eps. pairwise_distance: f[0] p, f[1] eps,
// b[0] keepdim. cdist: f[0] p.
#include <cmath>

#include "ember/ops/linalg.h"
#include "ember/backends/backend.h"
#include "ember/ops/nn.h"
#include "ember/ops/binary.h"
#include "ember/ops/nn_common.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"
#include "ember/ops/layout.h"

namespace ember {
namespace {

// Above this many rows on either side cdist's p = 2 uses the matmul expansion, like torch.
constexpr int64_t kCdistMatmulRows = 25;

void infer_distance(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 2) detail::throw_value(name, "expected 2 inputs");
  const Tensor& x = in[0];
  const Tensor& y = in[1];
  ops::require_defined(x, name, "the first input");
  ops::require_defined(y, name, "the second input");
  ops::require_float(name, x.dtype());
  ops::require_float(name, y.dtype());
  const DType r = promote_types(x.dtype(), y.dtype());
  switch (op) {
    case OpId::cosine_similarity: {
      Shape s = broadcast_shapes(x.shape(), y.shape(), name);
      int64_t d = wrap_dim(a.i[0], int64_t(s.size()), name);
      if (!s.empty()) s.erase(size_t(d));
      out.add(s, r);
      return;
    }
    case OpId::pairwise_distance: {
      Shape s = broadcast_shapes(x.shape(), y.shape(), name);
      if (s.empty()) detail::throw_shape(name, "expected inputs of at least 1 dim, found 0-d ones");
      if (a.b[0]) s[s.size() - 1] = 1;
      else s.erase(s.size() - 1);
      out.add(s, r);
      return;
    }
    default: {  // cdist
      if (x.dim() < 2 || y.dim() < 2)
        detail::throw_shape(name, "expected inputs of at least 2 dims [.., P, M] and [.., R, M], "
                                  "found " + shape_str(x.shape()) + " and " + shape_str(y.shape()));
      if (x.size(-1) != y.size(-1))
        detail::throw_shape(name, "expected inputs with the same last dim, found " +
                                      shape_str(x.shape()) + " and " + shape_str(y.shape()));
      if (!(a.f[0] >= 0))
        detail::throw_value(name, "p must be non-negative, found " + std::to_string(a.f[0]));
      Shape bx = x.shape(), by = y.shape();
      bx.resize(bx.size() - 2);
      by.resize(by.size() - 2);
      Shape s = broadcast_shapes(bx, by, name);
      s.push_back(x.size(-2));
      s.push_back(y.size(-2));
      out.add(s, r);
      return;
    }
  }
}

// The p-norm of d over `dim` (p = inf: max |d|, p = 0: count of non-zeros).
Tensor pnorm(const Tensor& d, double p, int64_t dim, bool keepdim) {
  if (p == 2) return sqrt(sum(d * d, {dim}, keepdim));
  Tensor ad = abs(d);
  if (p == 1) return sum(ad, {dim}, keepdim);
  if (std::isinf(p)) return p > 0 ? amax(ad, {dim}, keepdim) : amin(ad, {dim}, keepdim);
  if (p == 0) return sum(ne(d, 0), {dim}, keepdim, d.dtype());
  return pow(sum(pow(ad, p), {dim}, keepdim), 1.0 / p);
}

TensorList dec_cosine_similarity(const Attrs& a, std::span<const Tensor> in) {
  Shape s = broadcast_shapes(in[0].shape(), in[1].shape(), "cosine_similarity");
  const DType r = promote_types(in[0].dtype(), in[1].dtype());
  Tensor x = expand(in[0].to(r), s), y = expand(in[1].to(r), s);
  const int64_t d = wrap_dim(a.i[0], int64_t(s.size()), "cosine_similarity");
  // Each norm is clamped at eps separately, like torch.
  Tensor nx = clamp(sqrt(sum(x * x, {d})), Scalar(a.f[0]), std::nullopt);
  Tensor ny = clamp(sqrt(sum(y * y, {d})), Scalar(a.f[0]), std::nullopt);
  return {sum(x * y, {d}) / (nx * ny)};
}

TensorList dec_pairwise_distance(const Attrs& a, std::span<const Tensor> in) {
  return {pnorm(in[0] - in[1] + a.f[1], a.f[0], -1, a.b[0])};
}


TensorList dec_cdist(const Attrs& a, std::span<const Tensor> in) {
  const DType r = promote_types(in[0].dtype(), in[1].dtype());
  const Tensor x = in[0].to(r), y = in[1].to(r);
  const double p = a.f[0];
  if (p == 2 && (x.size(-2) > kCdistMatmulRows || y.size(-2) > kCdistMatmulRows)) {
    // |x - y|^2 = |x|^2 + |y|^2 - 2 x.y, with the cross term as one matmul.
    Tensor xx = sum(x * x, {-1}, true);
    Tensor yy = sum(y * y, {-1}, true).transpose(-2, -1);
    Tensor d2 = xx + yy - matmul(x, y.transpose(-2, -1)) * 2.0;
    return {sqrt(clamp(d2, Scalar(0), std::nullopt))};
  }
  return {pnorm(x.unsqueeze(-2) - y.unsqueeze(-3), p, -1, false)};
}

}  // namespace


Tensor cosine_similarity(const Tensor& a, const Tensor& b, int64_t dim, double eps) {
  Attrs at;
  at.i[0] = dim;
  at.f[0] = eps;
  return dispatch1(OpId::cosine_similarity, at, {a, b});
}
Tensor pairwise_distance(const Tensor& a, const Tensor& b, double p, double eps, bool keepdim) {
  Attrs at;
  at.f[0] = p;
  at.f[1] = eps;
  at.b[0] = keepdim;
  return dispatch1(OpId::pairwise_distance, at, {a, b});
}
Tensor cdist(const Tensor& a, const Tensor& b, double p) {
  Attrs at;
  at.f[0] = p;
  return dispatch1(OpId::cdist, at, {a, b});
}


namespace ops {
void register_distance_ops() {
  for (OpId op : {OpId::cosine_similarity, OpId::pairwise_distance, OpId::cdist})
    op_def_mut(op).infer = infer_distance;
  op_def_mut(OpId::cosine_similarity).decompose = dec_cosine_similarity;
  op_def_mut(OpId::pairwise_distance).decompose = dec_pairwise_distance;
  op_def_mut(OpId::cdist).decompose = dec_cdist;
}
}  // namespace ops

}  // namespace ember

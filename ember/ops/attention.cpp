// Transformer building blocks: dropout, embedding, scaled_dot_product_attention. API, inference,
// decompositions, registration. embedding has a flex kernel (a bounds-checked row gather);
// dropout and attention decompose into ember ops.
// Attrs: dropout: f[0] p, b[0] training. embedding: inputs (indices, weight), i[0] padding_idx
// when b[0]. scaled_dot_product_attention: inputs (q, k, v, attn_mask), f[0] dropout_p,
// b[0] is_causal, f[1] scale when b[1] (else 1/sqrt(E)).
#include <cmath>
#include <limits>

#include "ember/ops/attention_route.h"
#include "ember/ops/linalg.h"
#include "ember/backends/backend.h"
#include "ember/ops/nn.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/nn_common.h"
#include "ember/ops/unary.h"
#include "ember/ops/layout.h"
#include "ember/random.h"

namespace ember {
namespace {

void check_p(const char* name, double p) {
  if (!(p >= 0 && p <= 1))
    detail::throw_value(name, "dropout probability must be in [0, 1], found " + std::to_string(p));
}

void infer_dropout(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 1) detail::throw_value(name, "expected 1 input");
  ops::require_defined(in[0], name);
  ops::require_float(name, in[0].dtype());
  check_p(name, a.f[0]);
  out.add(in[0].shape(), in[0].dtype());
}

TensorList dec_dropout(const Attrs& a, std::span<const Tensor> in) {
  const Tensor& x = in[0];
  const double p = a.f[0];
  if (!a.b[0] || p == 0 || x.numel() == 0) return {x};
  if (p == 1) return {x * 0.0};  // like torch: NaN and inf inputs stay NaN
  // Keep with probability 1 - p and scale the kept values so the expectation is unchanged. The
  // mask draws the Philox state dropout drew when it was called.
  Attrs keep = a;
  keep.f[0] = 1 - p;
  keep.b[0] = true;
  return {x * (dispatch1(OpId::bernoulli, keep, {x}) * (1.0 / (1 - p)))};
}

void infer_embedding(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 2) detail::throw_value(name, "expected indices and weight");
  const Tensor& idx = in[0];
  const Tensor& w = in[1];
  ops::require_defined(idx, name, "indices");
  ops::require_defined(w, name, "weight");
  if (idx.dtype() != DType::I64 && idx.dtype() != DType::I32)
    detail::throw_dtype(name, "expected int64 or int32 indices, found " +
                                  std::string(dtype_name(idx.dtype())));
  if (w.dim() != 2)
    detail::throw_shape(name, "expected a 2-D weight [num_embeddings, dim], found shape " +
                                  shape_str(w.shape()));
  if (a.b[0] && (a.i[0] < -w.size(0) || a.i[0] >= w.size(0)))
    detail::throw_value(name, "padding_idx must be within num_embeddings (" +
                                  std::to_string(w.size(0)) + "), found " + std::to_string(a.i[0]));
  Shape s = idx.shape();
  s.push_back(w.size(1));
  out.add(s, w.dtype());
}

void infer_attention(OpId op, const Attrs& a, std::span<const Tensor> in, MetaList& out) {
  const char* name = op_name(op);
  if (in.size() != 4) detail::throw_value(name, "expected query, key, value and attn_mask");
  const Tensor& q = in[0];
  const Tensor& k = in[1];
  const Tensor& v = in[2];
  const Tensor& mask = in[3];
  ops::require_defined(q, name, "query");
  ops::require_defined(k, name, "key");
  ops::require_defined(v, name, "value");
  for (const Tensor* t : {&q, &k, &v}) {
    ops::require_float(name, t->dtype(), "query, key and value");
    if (t->dtype() != q.dtype())
      detail::throw_dtype(name, "expected query, key and value of one dtype, found " +
                                    std::string(dtype_name(q.dtype())) + " and " +
                                    std::string(dtype_name(t->dtype())));
    if (t->dim() < 2)
      detail::throw_shape(name, "expected query, key and value of at least 2 dims, found " +
                                    shape_str(t->shape()));
  }
  if (q.size(-1) != k.size(-1))
    detail::throw_shape(name, "query and key must have the same embedding size, found " +
                                  shape_str(q.shape()) + " and " + shape_str(k.shape()));
  if (k.size(-2) != v.size(-2))
    detail::throw_shape(name, "key and value must have the same sequence length, found " +
                                  shape_str(k.shape()) + " and " + shape_str(v.shape()));
  auto batch = [](const Tensor& t) {
    Shape s = t.shape();
    s.resize(s.size() - 2);
    return s;
  };
  Shape b = broadcast_shapes(broadcast_shapes(batch(q), batch(k), name), batch(v), name);
  Shape scores = b;
  scores.push_back(q.size(-2));
  scores.push_back(k.size(-2));
  if (mask.defined()) {
    if (mask.dtype() != DType::Bool && !is_floating(mask.dtype()))
      detail::throw_dtype(name, "expected a bool or floating attn_mask, found " +
                                    std::string(dtype_name(mask.dtype())));
    if (broadcast_shapes(mask.shape(), scores, name) != scores)
      detail::throw_shape(name, "attn_mask of shape " + shape_str(mask.shape()) +
                                    " does not broadcast to the scores' shape " +
                                    shape_str(scores));
    if (a.b[0]) detail::throw_value(name, "attn_mask and is_causal cannot both be set");
  }
  if (!(a.f[0] >= 0 && a.f[0] < 1))
    detail::throw_value(name, "dropout_p must be in [0, 1), found " + std::to_string(a.f[0]));
  Shape s = b;
  s.push_back(q.size(-2));
  s.push_back(v.size(-1));
  out.add(s, q.dtype());
}


detail::FusedAttentionFn g_fused[kNumBackends] = {};

TensorList dec_attention(const Attrs& a, std::span<const Tensor> in) {
  if (detail::FusedAttentionFn f = g_fused[int(in[0].device().backend())])
    if (Tensor out = f(a, in); out.defined()) return {out};
  // f16/bf16 compute in f32 (scores and softmax lose too much in 8 mantissa bits), then round.
  const DType dt = in[0].dtype();
  const bool low = dt == DType::F16 || dt == DType::BF16;
  auto up = [&](const Tensor& t) { return low && t.defined() && is_floating(t.dtype()) ? t.to(DType::F32) : t; };
  const Tensor q = up(in[0]), k = up(in[1]), v = up(in[2]), mask = up(in[3]);
  const double scale = a.b[1] ? a.f[1] : 1.0 / std::sqrt(double(q.size(-1)));
  Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  const double ninf = -std::numeric_limits<double>::infinity();
  if (a.b[0]) {  // causal: query i sees keys j <= i
    Tensor rows = arange(q.size(-2), {DType::I64, q.device()}).unsqueeze(-1);
    Tensor cols = arange(k.size(-2), {DType::I64, q.device()});
    scores = where(le(cols, rows), scores, ninf);
  } else if (mask.defined()) {
    scores =
        mask.dtype() == DType::Bool ? where(mask, scores, ninf) : scores + mask.to(scores.dtype());
  }
  Tensor attn = softmax(scores, -1);
  if (a.f[0] > 0) {  // with the Philox state the attention call drew
    Attrs d = a;
    d.b[0] = true;
    attn = dispatch1(OpId::dropout, d, {attn});
  }
  Tensor out = matmul(attn, v);
  return {low ? out.to(dt) : out};
}

}  // namespace


Tensor dropout(const Tensor& x, double p, bool training) {
  Attrs a;
  a.f[0] = p;
  a.b[0] = training;
  // The mask's random state is drawn now (only when a mask will be drawn, as eagerly).
  if (x.defined() && training && p > 0 && p < 1 && x.numel() > 0) detail::draw_philox(a, x.device());
  return dispatch1(OpId::dropout, a, {x});
}

namespace {
// One mask value per channel, broadcast over the `dims` spatial dims: whole channels drop.
Tensor feature_dropout(const char* op, const Tensor& x, double p, bool training, int64_t dims) {
  ops::require_defined(x, op);
  if (!(p >= 0 && p <= 1))
    detail::throw_value(op, "expected p in [0, 1], found " + std::to_string(p));
  if (x.dim() != dims + 1 && x.dim() != dims + 2)
    detail::throw_shape(op, "expected a " + std::to_string(dims + 1) + "-D (unbatched) or " +
                                std::to_string(dims + 2) + "-D input, found " +
                                std::to_string(x.dim()) + "-D");
  if (!training || p == 0 || x.numel() == 0) return x;
  if (p == 1) return x * 0;
  Shape mask_shape = x.shape();
  for (int64_t d = x.dim() - dims; d < x.dim(); ++d) mask_shape[size_t(d)] = 1;
  const Tensor keep = bernoulli(zeros(mask_shape, {x.dtype(), x.device(), {}}), 1 - p);
  return x * (keep * (1 / (1 - p)));
}
}  // namespace
Tensor dropout2d(const Tensor& x, double p, bool training) {
  return feature_dropout("dropout2d", x, p, training, 2);
}
Tensor dropout3d(const Tensor& x, double p, bool training) {
  return feature_dropout("dropout3d", x, p, training, 3);
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  Attrs a;
  a.i[0] = padding_idx.value_or(0);
  a.b[0] = padding_idx.has_value();
  return dispatch1(OpId::embedding, a, {indices, weight});
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& o) {
  Attrs a;
  a.f[0] = o.dropout_p;
  a.b[0] = o.is_causal;
  a.f[1] = o.scale.value_or(0);
  a.b[1] = o.scale.has_value();
  if (o.dropout_p > 0 && q.defined()) detail::draw_philox(a, q.device());
  return dispatch1(OpId::scaled_dot_product_attention, a, {q, k, v, o.attn_mask});
}


namespace detail {
void set_fused_attention(Backend b, FusedAttentionFn fn) { g_fused[int(b)] = fn; }
FusedAttentionFn fused_attention(Backend b) { return g_fused[int(b)]; }
}  // namespace detail

namespace ops {
void register_attention_ops() {
  op_def_mut(OpId::dropout).infer = infer_dropout;
  op_def_mut(OpId::dropout).decompose = dec_dropout;
  op_def_mut(OpId::embedding).infer = infer_embedding;
  op_def_mut(OpId::scaled_dot_product_attention).infer = infer_attention;
  op_def_mut(OpId::scaled_dot_product_attention).decompose = dec_attention;
}
}  // namespace ops

}  // namespace ember

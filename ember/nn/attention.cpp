// MultiheadAttention: projections, per-head scaled dot products, masks and the output projection.
#include "ember/nn/attention.h"

#include <cmath>
#include <limits>

#include "ember/error.h"
#include "ember/nn/init.h"
#include "ember/nn/repr.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"

namespace ember::nn {

namespace F = ember::nn::functional;

namespace {
// The options are checked before out_proj is built, so a bad size is reported by the attention
// module (not by the Linear inside it) and no parameter is allocated first.
LinearOptions checked_out_proj(const MultiheadAttentionOptions& o) {
  if (o.num_heads < 1 || o.embed_dim % o.num_heads != 0)
    ember::detail::throw_value("MultiheadAttention",
                               "expected embed_dim divisible by num_heads, found embed_dim=" +
                                   std::to_string(o.embed_dim) +
                                   ", num_heads=" + std::to_string(o.num_heads));
  const int64_t rows = checked_mul(3, o.embed_dim, "MultiheadAttention", "3 * embed_dim");
  fmt::param_shape("MultiheadAttention", {rows, o.embed_dim});
  return {.in = o.embed_dim, .out = o.embed_dim, .bias = o.bias, .param = o.param};
}
}  // namespace

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& o)
    : out_proj(checked_out_proj(o)), options(o) {
  in_proj_weight = empty({3 * o.embed_dim, o.embed_dim}, fmt::topts(o.param));
  if (o.bias) in_proj_bias = empty({3 * o.embed_dim}, fmt::topts(o.param));
  reset_parameters();
  register_parameter("in_proj_weight", in_proj_weight);
  register_parameter("in_proj_bias", in_proj_bias);
  register_module("out_proj", out_proj);
}

void MultiheadAttention::reset_parameters() {
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj.bias.defined()) init::zeros_(out_proj.bias);
}

std::tuple<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                       const Tensor& value,
                                                       const AttentionArgs& args) {
  const int64_t e = options.embed_dim, h = options.num_heads, d = e / h;
  for (const Tensor* t : {&query, &key, &value})
    if (t->dim() != 3 || t->shape()[2] != e)
      ember::detail::throw_shape("MultiheadAttention", "expected 3D inputs with embed_dim " +
                                                           std::to_string(e) + " last, found " +
                                                           shape_str(t->shape()));
  // Work batch first: [N, L, E].
  Tensor q = options.batch_first ? query : query.transpose(0, 1);
  Tensor k = options.batch_first ? key : key.transpose(0, 1);
  Tensor v = options.batch_first ? value : value.transpose(0, 1);
  const int64_t n = q.shape()[0], l = q.shape()[1], s = k.shape()[1];
  if (k.shape()[0] != n || v.shape()[0] != n || v.shape()[1] != s)
    ember::detail::throw_shape("MultiheadAttention",
                               "query, key and value batch or key/value "
                               "lengths differ: " +
                                   shape_str(query.shape()) + ", " + shape_str(key.shape()) + ", " +
                                   shape_str(value.shape()));
  TensorList w = chunk(in_proj_weight, 3, 0);
  TensorList b = in_proj_bias.defined() ? chunk(in_proj_bias, 3, 0) : TensorList{{}, {}, {}};
  auto heads = [&](const Tensor& x, int i, int64_t len) {  // [N, len, E] -> [N, H, len, D]
    return linear(x, w[i], b[i]).reshape({n, len, h, d}).transpose(1, 2);
  };
  Tensor qh = heads(q, 0, l), kh = heads(k, 1, s), vh = heads(v, 2, s);
  Tensor scores = matmul(qh, kh.transpose(-2, -1)) * (1.0 / std::sqrt(double(d)));  // [N,H,L,S]
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (args.attn_mask.defined()) {
    Tensor m = args.attn_mask.dim() == 3 ? args.attn_mask.reshape({n, h, l, s}) : args.attn_mask;
    scores = m.dtype() == kBool ? masked_fill(scores, m, neg_inf) : scores + m;
  }
  if (args.key_padding_mask.defined()) {
    Tensor m = args.key_padding_mask.reshape({n, 1, 1, s});
    scores = m.dtype() == kBool ? masked_fill(scores, m, neg_inf) : scores + m;
  }
  Tensor attn = F::softmax(scores, -1);
  Tensor used = options.dropout > 0 ? F::dropout(attn, options.dropout, is_training()) : attn;
  Tensor out = matmul(used, vh).transpose(1, 2).reshape({n, l, e});
  out = out_proj(out);
  if (!options.batch_first) out = out.transpose(0, 1);
  Tensor weights;
  if (args.need_weights) weights = args.average_attn_weights ? attn.mean({1}) : attn;
  return {out, weights};
}

Tensor MultiheadAttention::forward(const Tensor& x) {
  return std::get<0>(forward(x, x, x, {.need_weights = false}));
}

std::shared_ptr<Module> MultiheadAttention::clone() const {
  auto c = std::make_shared<MultiheadAttention>(options);
  c->copy_state_from(*this);
  return c;
}

}  // namespace ember::nn

// Transformer layers: the encoder's self-attention and feed-forward blocks, the decoder's
// self-attention, attention over the encoder output ("memory") and feed-forward blocks, each
// with a residual, post-norm (torch's default) or pre-norm.
#include "ember/nn/transformer.h"

#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/unary.h"

namespace ember::nn {

namespace {

void check_activation(const char* module, const std::string& activation) {
  if (activation != "relu" && activation != "gelu")
    ember::detail::throw_value(
        module, "expected activation \"relu\" or \"gelu\", found \"" + activation + "\"");
}

MultiheadAttentionOptions attention_options(const TransformerEncoderLayerOptions& o) {
  return {.embed_dim = o.d_model,
          .num_heads = o.nhead,
          .dropout = o.dropout,
          .batch_first = o.batch_first,
          .param = o.param};
}

// linear2(dropout(activation(linear1(x)))), the block both layers end with.
Tensor feed_forward(const TransformerEncoderLayerOptions& o, Linear& linear1, Dropout& dropout,
                    Linear& linear2, const Tensor& x) {
  Tensor h = linear1(x);
  h = o.activation == "relu" ? relu(h) : gelu(h);
  return linear2(dropout(h));
}

// Rank and feature checks named after the layer (MultiheadAttention's would name itself).
void check_input(const char* module, const char* what, const Tensor& t, int64_t d_model) {
  if (t.dim() != 3 || t.shape()[2] != d_model)
    ember::detail::throw_shape(module, std::string("expected ") + what + " 3D with d_model " +
                                           std::to_string(d_model) + " last, found " +
                                           shape_str(t.shape()));
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& o)
    : self_attn(attention_options(o)),
      linear1({.in = o.d_model, .out = o.dim_feedforward, .param = o.param}),
      dropout(o.dropout),
      linear2({.in = o.dim_feedforward, .out = o.d_model, .param = o.param}),
      norm1({.shape = {o.d_model}, .eps = o.layer_norm_eps, .param = o.param}),
      norm2({.shape = {o.d_model}, .eps = o.layer_norm_eps, .param = o.param}),
      dropout1(o.dropout),
      dropout2(o.dropout),
      options(o) {
  check_activation("TransformerEncoderLayer", o.activation);
  register_modules({{"self_attn", self_attn},
                    {"linear1", linear1},
                    {"dropout", dropout},
                    {"linear2", linear2},
                    {"norm1", norm1},
                    {"norm2", norm2},
                    {"dropout1", dropout1},
                    {"dropout2", dropout2}});
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const AttentionArgs& masks) {
  check_input("TransformerEncoderLayer", "src", src, options.d_model);
  AttentionArgs a = masks;
  a.need_weights = false;
  auto sa = [&](const Tensor& x) { return dropout1(std::get<0>(self_attn(x, x, x, a))); };
  auto ff = [&](const Tensor& x) {
    return dropout2(feed_forward(options, linear1, dropout, linear2, x));
  };
  Tensor x = src;
  if (options.norm_first) {
    x = x + sa(norm1(x));
    return x + ff(norm2(x));
  }
  x = norm1(x + sa(x));
  return norm2(x + ff(x));
}

std::shared_ptr<Module> TransformerEncoderLayer::clone() const {
  auto c = std::make_shared<TransformerEncoderLayer>(options);
  c->copy_state_from(*this);
  return c;
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerDecoderLayerOptions& o)
    : self_attn(attention_options(o)),
      multihead_attn(attention_options(o)),
      linear1({.in = o.d_model, .out = o.dim_feedforward, .param = o.param}),
      dropout(o.dropout),
      linear2({.in = o.dim_feedforward, .out = o.d_model, .param = o.param}),
      norm1({.shape = {o.d_model}, .eps = o.layer_norm_eps, .param = o.param}),
      norm2({.shape = {o.d_model}, .eps = o.layer_norm_eps, .param = o.param}),
      norm3({.shape = {o.d_model}, .eps = o.layer_norm_eps, .param = o.param}),
      dropout1(o.dropout),
      dropout2(o.dropout),
      dropout3(o.dropout),
      options(o) {
  check_activation("TransformerDecoderLayer", o.activation);
  register_modules({{"self_attn", self_attn},
                    {"multihead_attn", multihead_attn},
                    {"linear1", linear1},
                    {"dropout", dropout},
                    {"linear2", linear2},
                    {"norm1", norm1},
                    {"norm2", norm2},
                    {"norm3", norm3},
                    {"dropout1", dropout1},
                    {"dropout2", dropout2},
                    {"dropout3", dropout3}});
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const DecoderArgs& masks) {
  check_input("TransformerDecoderLayer", "tgt", tgt, options.d_model);
  check_input("TransformerDecoderLayer", "memory", memory, options.d_model);
  auto sa = [&](const Tensor& x) {
    AttentionArgs a{.key_padding_mask = masks.tgt_key_padding_mask,
                    .attn_mask = masks.tgt_mask,
                    .need_weights = false};
    return dropout1(std::get<0>(self_attn(x, x, x, a)));
  };
  auto mha = [&](const Tensor& x) {
    AttentionArgs a{.key_padding_mask = masks.memory_key_padding_mask,
                    .attn_mask = masks.memory_mask,
                    .need_weights = false};
    return dropout2(std::get<0>(multihead_attn(x, memory, memory, a)));
  };
  auto ff = [&](const Tensor& x) {
    return dropout3(feed_forward(options, linear1, dropout, linear2, x));
  };
  Tensor x = tgt;
  if (options.norm_first) {
    x = x + sa(norm1(x));
    x = x + mha(norm2(x));
    return x + ff(norm3(x));
  }
  x = norm1(x + sa(x));
  x = norm2(x + mha(x));
  return norm3(x + ff(x));
}

Tensor TransformerDecoderLayer::forward(const Tensor&) {
  ember::detail::throw_value("TransformerDecoderLayer",
                             "forward needs the encoder output: call forward(tgt, memory, masks)");
}

std::shared_ptr<Module> TransformerDecoderLayer::clone() const {
  auto c = std::make_shared<TransformerDecoderLayer>(options);
  c->copy_state_from(*this);
  return c;
}

}  // namespace ember::nn

// Transformer encoder: self-attention and feed-forward blocks with residuals, post- or pre-norm.
#include "ember/nn/transformer.h"

#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/unary.h"

namespace ember::nn {

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& o)
    : self_attn({.embed_dim = o.d_model,
                 .num_heads = o.nhead,
                 .dropout = o.dropout,
                 .batch_first = o.batch_first,
                 .param = o.param}),
      linear1({.in = o.d_model, .out = o.dim_feedforward, .param = o.param}),
      dropout(o.dropout),
      linear2({.in = o.dim_feedforward, .out = o.d_model, .param = o.param}),
      norm1({.shape = {o.d_model}, .eps = o.layer_norm_eps, .param = o.param}),
      norm2({.shape = {o.d_model}, .eps = o.layer_norm_eps, .param = o.param}),
      dropout1(o.dropout),
      dropout2(o.dropout),
      options(o) {
  if (o.activation != "relu" && o.activation != "gelu")
    ember::detail::throw_value(
        "TransformerEncoderLayer",
        "expected activation \"relu\" or \"gelu\", found \"" + o.activation + "\"");
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
  AttentionArgs a = masks;
  a.need_weights = false;
  auto sa = [&](const Tensor& x) { return dropout1(std::get<0>(self_attn(x, x, x, a))); };
  auto ff = [&](const Tensor& x) {
    Tensor h = linear1(x);
    h = options.activation == "relu" ? relu(h) : gelu(h);
    return dropout2(linear2(dropout(h)));
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

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                                       std::optional<LayerNormOptions> norm_options) {
  if (num_layers < 1)
    ember::detail::throw_value("TransformerEncoder",
                               "expected num_layers >= 1, found " + std::to_string(num_layers));
  for (int64_t i = 0; i < num_layers; ++i) layers.push_back(layer.clone());
  register_module("layers", layers);
  if (norm_options) {
    norm = std::make_shared<LayerNorm>(*norm_options);
    register_module("norm", norm);
  }
}

Tensor TransformerEncoder::forward(const Tensor& src, const AttentionArgs& masks) {
  Tensor x = src;
  for (const auto& l : layers) x = static_cast<TransformerEncoderLayer&>(*l).forward(x, masks);
  return norm ? (*norm)(x) : x;
}

std::shared_ptr<Module> TransformerEncoder::clone() const {
  auto first = std::static_pointer_cast<TransformerEncoderLayer>(*layers.begin());
  std::optional<LayerNormOptions> n;
  if (norm) n = norm->options;
  auto c = std::make_shared<TransformerEncoder>(*first, int64_t(layers.size()), n);
  c->copy_state_from(*this);
  return c;
}

}  // namespace ember::nn

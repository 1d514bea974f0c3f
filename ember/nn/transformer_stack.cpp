// Stacks of transformer layers (TransformerEncoder, TransformerDecoder), the encoder-decoder
// Transformer and torch's causal mask helper.
#include <limits>

#include "ember/error.h"
#include "ember/nn/init.h"
#include "ember/nn/transformer.h"
#include "ember/ops/layout.h"

namespace ember::nn {

Tensor generate_square_subsequent_mask(int64_t n, TensorOptions o) {
  if (n < 0)
    ember::detail::throw_value("generate_square_subsequent_mask",
                               "expected n >= 0, found " + std::to_string(n));
  return triu(full({n, n}, -std::numeric_limits<double>::infinity(), o), 1);
}

TransformerStack::TransformerStack(const char* name, const Module& layer, int64_t num_layers,
                                   std::optional<LayerNormOptions> norm_options) {
  if (num_layers < 1)
    ember::detail::throw_value(name,
                               "expected num_layers >= 1, found " + std::to_string(num_layers));
  for (int64_t i = 0; i < num_layers; ++i) layers.push_back(layer.clone());
  register_module("layers", layers);
  if (norm_options) {
    norm = std::make_shared<LayerNorm>(*norm_options);
    register_module("norm", norm);
  }
}

std::optional<LayerNormOptions> TransformerStack::norm_options() const {
  if (!norm) return {};
  return norm->options;
}

namespace {

// A stack built from its first layer, then given every value of `s`.
template <class Stack, class Layer>
std::shared_ptr<Module> clone_stack(const Stack& s) {
  const auto& first = static_cast<const Layer&>(**s.layers.begin());
  auto c = std::make_shared<Stack>(first, int64_t(s.layers.size()), s.norm_options());
  c->copy_state_from(s);
  return c;
}

}  // namespace

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                                       std::optional<LayerNormOptions> norm)
    : TransformerStack("TransformerEncoder", layer, num_layers, norm) {}

Tensor TransformerEncoder::forward(const Tensor& src, const AttentionArgs& masks) {
  Tensor x = src;
  for (const auto& l : layers) x = static_cast<TransformerEncoderLayer&>(*l).forward(x, masks);
  return norm ? (*norm)(x) : x;
}

std::shared_ptr<Module> TransformerEncoder::clone() const {
  return clone_stack<TransformerEncoder, TransformerEncoderLayer>(*this);
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers,
                                       std::optional<LayerNormOptions> norm)
    : TransformerStack("TransformerDecoder", layer, num_layers, norm) {}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory,
                                   const DecoderArgs& masks) {
  Tensor x = tgt;
  for (const auto& l : layers)
    x = static_cast<TransformerDecoderLayer&>(*l).forward(x, memory, masks);
  return norm ? (*norm)(x) : x;
}

Tensor TransformerDecoder::forward(const Tensor&) {
  ember::detail::throw_value("TransformerDecoder",
                             "forward needs the encoder output: call forward(tgt, memory, masks)");
}

std::shared_ptr<Module> TransformerDecoder::clone() const {
  return clone_stack<TransformerDecoder, TransformerDecoderLayer>(*this);
}

namespace {

TransformerEncoderLayerOptions layer_options(const TransformerOptions& o) {
  return {.d_model = o.d_model,
          .nhead = o.nhead,
          .dim_feedforward = o.dim_feedforward,
          .dropout = o.dropout,
          .activation = o.activation,
          .layer_norm_eps = o.layer_norm_eps,
          .batch_first = o.batch_first,
          .norm_first = o.norm_first,
          .param = o.param};
}

LayerNormOptions final_norm(const TransformerOptions& o) {
  return {.shape = {o.d_model}, .eps = o.layer_norm_eps, .param = o.param};
}

}  // namespace

Transformer::Transformer(const TransformerOptions& o)
    : encoder(TransformerEncoderLayer(layer_options(o)), o.num_encoder_layers, final_norm(o)),
      decoder(TransformerDecoderLayer(layer_options(o)), o.num_decoder_layers, final_norm(o)),
      options(o) {
  register_modules({{"encoder", encoder}, {"decoder", decoder}});
  for (Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const TransformerArgs& masks) {
  for (const Tensor* t : {&src, &tgt})
    if (t->dim() != 3 || t->shape()[2] != options.d_model)
      ember::detail::throw_shape("Transformer", "expected src and tgt 3D with d_model " +
                                                    std::to_string(options.d_model) +
                                                    " last, found " + shape_str(t->shape()));
  const int b = options.batch_first ? 0 : 1;
  if (src.shape()[b] != tgt.shape()[b])
    ember::detail::throw_shape("Transformer",
                               "expected src and tgt with the same batch size, found " +
                                   shape_str(src.shape()) + " and " + shape_str(tgt.shape()));
  Tensor memory = encoder.forward(
      src, {.key_padding_mask = masks.src_key_padding_mask, .attn_mask = masks.src_mask});
  return decoder.forward(tgt, memory,
                         {.tgt_mask = masks.tgt_mask,
                          .memory_mask = masks.memory_mask,
                          .tgt_key_padding_mask = masks.tgt_key_padding_mask,
                          .memory_key_padding_mask = masks.memory_key_padding_mask});
}

Tensor Transformer::forward(const Tensor&) {
  ember::detail::throw_value("Transformer",
                             "forward needs src and tgt: call forward(src, tgt, masks)");
}

std::shared_ptr<Module> Transformer::clone() const {
  auto c = std::make_shared<Transformer>(options);
  c->copy_state_from(*this);
  return c;
}

}  // namespace ember::nn

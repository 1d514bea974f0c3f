#pragma once
// Transformer layers with PyTorch 1.13's submodule names and key order: TransformerEncoderLayer
// (self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2), TransformerDecoderLayer
// (self_attn, multihead_attn, linear1, dropout, linear2, norm1..3, dropout1..3), stacks of them
// ("layers.N.", optional final "norm") and the full Transformer ("encoder.", "decoder.").
#include <optional>
#include <string>

#include "ember/nn/activation.h"
#include "ember/nn/attention.h"
#include "ember/nn/container.h"
#include "ember/nn/layers.h"
#include "ember/nn/norm.h"
#include "ember/ops/creation.h"

namespace ember::nn {

struct TransformerEncoderLayerOptions {
  int64_t d_model = 0, nhead = 1;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;  // pre-norm instead of post-norm
  ParamOptions param = {};
};

class TransformerEncoderLayer : public Module {
 public:
  EMBER_MODULE_ARROW(TransformerEncoderLayer)
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& o);
  /// libtorch's positional form: nn::TransformerEncoderLayer(d_model, nhead).
  TransformerEncoderLayer(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayer(TransformerEncoderLayerOptions{.d_model = d_model, .nhead = nhead}) {}
  using Module::forward;
  using Module::operator();
  /// src [S, N, E] (or [N, S, E] batch first); masks as in MultiheadAttention.
  Tensor forward(const Tensor& src, const AttentionArgs& masks);
  /// libtorch's order: (src, src_mask, src_key_padding_mask).
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {}) {
    return forward(src, AttentionArgs{.key_padding_mask = src_key_padding_mask, .attn_mask = src_mask});
  }
  Tensor operator()(const Tensor& src, const AttentionArgs& masks) { return forward(src, masks); }
  Tensor operator()(const Tensor& src, const Tensor& src_mask,
                    const Tensor& src_key_padding_mask = {}) {
    return forward(src, src_mask, src_key_padding_mask);
  }
  Tensor forward(const Tensor& src) override { return forward(src, AttentionArgs{}); }
  std::shared_ptr<Module> clone() const override;
  MultiheadAttention self_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2;
  Dropout dropout1, dropout2;
  const TransformerEncoderLayerOptions options;
};

/// What TransformerEncoder and TransformerDecoder share: `num_layers` deep copies of a layer
/// ("layers.N.") and an optional final LayerNorm ("norm").
class TransformerStack : public Module {
 public:
  EMBER_MODULE_ARROW(TransformerStack)
  /// The final norm's options (empty without one).
  std::optional<LayerNormOptions> norm_options() const;
  ModuleList layers;
  std::shared_ptr<LayerNorm> norm;  // null without a final norm

 protected:
  TransformerStack(const char* name, const Module& layer, int64_t num_layers,
                   std::optional<LayerNormOptions> norm);
};

class TransformerEncoder : public TransformerStack {
 public:
  EMBER_MODULE_ARROW(TransformerEncoder)
  TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                     std::optional<LayerNormOptions> norm = {});
  using Module::forward;
  using Module::operator();
  Tensor forward(const Tensor& src, const AttentionArgs& masks);
  Tensor forward(const Tensor& src) override { return forward(src, AttentionArgs{}); }
  /// libtorch's order: (src, mask, src_key_padding_mask).
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {}) {
    return forward(src, AttentionArgs{.key_padding_mask = src_key_padding_mask, .attn_mask = mask});
  }
  Tensor operator()(const Tensor& src, const AttentionArgs& masks) { return forward(src, masks); }
  Tensor operator()(const Tensor& src, const Tensor& mask,
                    const Tensor& src_key_padding_mask = {}) {
    return forward(src, mask, src_key_padding_mask);
  }
  std::shared_ptr<Module> clone() const override;
};

/// torch's causal mask: [n, n] float, 0 on and below the diagonal, -inf above (additive).
Tensor generate_square_subsequent_mask(int64_t n, TensorOptions o = {});

/// The decoder's masks, named as in torch's forward(tgt, memory, ...): tgt_* go to the
/// self-attention, memory_* to the attention over the encoder output (see AttentionArgs).
struct DecoderArgs {
  Tensor tgt_mask = {}, memory_mask = {};
  Tensor tgt_key_padding_mask = {}, memory_key_padding_mask = {};
};

/// The same options as the encoder layer's.
using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;

class TransformerDecoderLayer : public Module {
 public:
  EMBER_MODULE_ARROW(TransformerDecoderLayer)
  explicit TransformerDecoderLayer(const TransformerDecoderLayerOptions& o);
  using Module::operator();
  /// tgt [T, N, E], memory [S, N, E] (or [N, T, E], [N, S, E] batch first).
  Tensor forward(const Tensor& tgt, const Tensor& memory, const DecoderArgs& masks = {});
  Tensor operator()(const Tensor& tgt, const Tensor& memory, const DecoderArgs& masks = {}) {
    return forward(tgt, memory, masks);
  }
  /// Throws ValueError: like torch, a decoder layer needs the memory it attends to.
  Tensor forward(const Tensor& tgt) override;
  std::shared_ptr<Module> clone() const override;
  MultiheadAttention self_attn, multihead_attn;
  Linear linear1;
  Dropout dropout;
  Linear linear2;
  LayerNorm norm1, norm2, norm3;
  Dropout dropout1, dropout2, dropout3;
  const TransformerDecoderLayerOptions options;
};

class TransformerDecoder : public TransformerStack {
 public:
  EMBER_MODULE_ARROW(TransformerDecoder)
  TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers,
                     std::optional<LayerNormOptions> norm = {});
  using Module::operator();
  Tensor forward(const Tensor& tgt, const Tensor& memory, const DecoderArgs& masks = {});
  Tensor operator()(const Tensor& tgt, const Tensor& memory, const DecoderArgs& masks = {}) {
    return forward(tgt, memory, masks);
  }
  /// Throws ValueError: the decoder needs memory.
  Tensor forward(const Tensor& tgt) override;
  std::shared_ptr<Module> clone() const override;
};

/// torch.nn.Transformer's defaults (the base model of "Attention is all you need").
struct TransformerOptions {
  int64_t d_model = 512, nhead = 8;
  int64_t num_encoder_layers = 6, num_decoder_layers = 6;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  ParamOptions param = {};
};

/// Every mask of Transformer::forward(src, tgt, ...), named as in torch.
struct TransformerArgs {
  Tensor src_mask = {}, tgt_mask = {}, memory_mask = {};
  Tensor src_key_padding_mask = {}, tgt_key_padding_mask = {}, memory_key_padding_mask = {};
};

/// An encoder and a decoder stack, each with a final LayerNorm, every matrix re-drawn
/// xavier_uniform as torch does.
class Transformer : public Module {
 public:
  EMBER_MODULE_ARROW(Transformer)
  explicit Transformer(const TransformerOptions& o = {});
  using Module::operator();
  /// src [S, N, E], tgt [T, N, E] (or batch first) -> [T, N, E].
  Tensor forward(const Tensor& src, const Tensor& tgt, const TransformerArgs& masks = {});
  Tensor operator()(const Tensor& src, const Tensor& tgt, const TransformerArgs& masks = {}) {
    return forward(src, tgt, masks);
  }
  /// Throws ValueError: a Transformer needs both src and tgt.
  Tensor forward(const Tensor& src) override;
  std::shared_ptr<Module> clone() const override;
  TransformerEncoder encoder;
  TransformerDecoder decoder;
  const TransformerOptions options;
};

}  // namespace ember::nn

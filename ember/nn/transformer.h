#pragma once
// TransformerEncoderLayer and TransformerEncoder with PyTorch's submodule names (self_attn,
// linear1, dropout, linear2, norm1, norm2, dropout1, dropout2; a stack's "layers.N.").
#include <optional>
#include <string>

#include "ember/nn/activation.h"
#include "ember/nn/attention.h"
#include "ember/nn/container.h"
#include "ember/nn/layers.h"
#include "ember/nn/norm.h"

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
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& o);
  using Module::forward;
  /// src [S, N, E] (or [N, S, E] batch first); masks as in MultiheadAttention.
  Tensor forward(const Tensor& src, const AttentionArgs& masks);
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

/// `num_layers` deep copies of `layer`, then an optional final LayerNorm ("norm").
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers,
                     std::optional<LayerNormOptions> norm = {});
  using Module::forward;
  Tensor forward(const Tensor& src, const AttentionArgs& masks);
  Tensor forward(const Tensor& src) override { return forward(src, AttentionArgs{}); }
  std::shared_ptr<Module> clone() const override;
  ModuleList layers;
  std::shared_ptr<LayerNorm> norm;  // null without a final norm
};

}  // namespace ember::nn

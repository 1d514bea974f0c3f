#pragma once
// MultiheadAttention with PyTorch's parameters (in_proj_weight [3E, E], in_proj_bias [3E],
// out_proj) and initialisation (xavier_uniform in_proj_weight, zero biases).
#include <tuple>

#include "ember/nn/layers.h"

namespace ember::nn {

struct MultiheadAttentionOptions {
  int64_t embed_dim = 0, num_heads = 1;
  double dropout = 0.0;  // on the attention weights, in training mode
  bool bias = true;
  bool batch_first = false;  // inputs [N, L, E] instead of [L, N, E]
  ParamOptions param = {};
};

struct AttentionArgs {
  /// [N, S] bool, true = ignore that key (PyTorch's convention).
  Tensor key_padding_mask = {};
  /// [L, S] or [N * heads, L, S]: bool (true = not allowed) or additive float.
  Tensor attn_mask = {};
  bool need_weights = true;
  bool average_attn_weights = true;
};

class MultiheadAttention : public Module {
 public:
  EMBER_MODULE_ARROW(MultiheadAttention)
  explicit MultiheadAttention(const MultiheadAttentionOptions& o);
  /// libtorch's positional form: nn::MultiheadAttention(embed_dim, num_heads).
  MultiheadAttention(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttention(
            MultiheadAttentionOptions{.embed_dim = embed_dim, .num_heads = num_heads}) {}
  using Module::forward;
  /// (output, attention weights — [N, L, S] averaged over heads, or [N, heads, L, S]; undefined
  /// unless need_weights).
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const AttentionArgs& args = {});
  using Module::operator();
  std::tuple<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const AttentionArgs& args = {}) {
    return forward(query, key, value, args);
  }
  /// Self-attention: forward(x, x, x) without weights.
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;
  void reset_parameters();
  Tensor in_proj_weight, in_proj_bias;
  Linear out_proj;
  const MultiheadAttentionOptions options;
};

}  // namespace ember::nn

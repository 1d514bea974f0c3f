#pragma once
// A Llama-style decoder with Hugging Face's module names and state_dict keys
// (LlamaForCausalLM: "model.layers.0.self_attn.q_proj.weight", ...): RMSNorm, rotary position
// embeddings (HF's rotate-half layout), grouped-query attention and a SwiGLU MLP. Mistral and
// TinyLlama checkpoints (without sliding windows) share the layout.
#include <memory>
#include <string>
#include <vector>

#include "ember/models/causal_lm.h"
#include "ember/nn/container.h"
#include "ember/nn/layers.h"
#include "ember/nn/norm.h"

namespace ember::models {

/// config.json's fields (HF names and defaults: Llama-2 7B).
struct LlamaConfig {
  int64_t vocab_size = 32000, hidden_size = 4096, intermediate_size = 11008;
  int64_t num_hidden_layers = 32, num_attention_heads = 32;
  int64_t num_key_value_heads = 0;  // 0: num_attention_heads (no grouping)
  int64_t head_dim = 0;             // 0: hidden_size / num_attention_heads
  int64_t max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6, rope_theta = 10000.0;
  bool tie_word_embeddings = false, attention_bias = false, mlp_bias = false;
  std::string hidden_act = "silu";
  std::vector<int64_t> eos_token_ids = {2};
  int64_t kv_heads() const {
    return num_key_value_heads ? num_key_value_heads : num_attention_heads;
  }
  int64_t head_size() const { return head_dim ? head_dim : hidden_size / num_attention_heads; }
  /// Parses config.json's text. rope_scaling other than none is refused (store::FormatError).
  static LlamaConfig from_json(const std::string& text);
  static LlamaConfig from_file(const std::string& path);
};

/// cos and sin of every position's rotation, [max_positions, head_dim] each.
struct RotaryTables {
  RotaryTables(int64_t max_positions, int64_t head_dim, double theta);
  /// x [B, H, T, D] rotated as positions past .. past + T - 1.
  Tensor apply(const Tensor& x, int64_t past) const;
  Tensor cos, sin;
};

class LlamaAttention : public nn::Module {
 public:
  explicit LlamaAttention(const LlamaConfig& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& x, const RotaryTables& rope, KVCache* cache, int64_t layer);
  nn::Linear q_proj, k_proj, v_proj, o_proj;
  const int64_t heads, kv_heads, head_dim;
};

class LlamaMLP : public nn::Module {
 public:
  explicit LlamaMLP(const LlamaConfig& c);
  /// down(act(gate(x)) * up(x)).
  Tensor forward(const Tensor& x) override;
  nn::Linear gate_proj, up_proj, down_proj;
  const std::string act;
};

class LlamaDecoderLayer : public nn::Module {
 public:
  explicit LlamaDecoderLayer(const LlamaConfig& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& x, const RotaryTables& rope, KVCache* cache, int64_t layer);
  LlamaAttention self_attn;
  LlamaMLP mlp;
  nn::RMSNorm input_layernorm, post_attention_layernorm;
};

/// HF's LlamaModel ("embed_tokens", "layers.N", "norm").
class LlamaModel : public nn::Module {
 public:
  explicit LlamaModel(const LlamaConfig& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& ids, KVCache* cache);
  Tensor forward(const Tensor& ids) override { return forward(ids, nullptr); }
  nn::Embedding embed_tokens;
  nn::ModuleList layers;
  nn::RMSNorm norm;
  const LlamaConfig config;
  /// Non-persistent buffers ("rotary_cos", "rotary_sin"): to() moves them, state_dict()
  /// leaves them out.
  RotaryTables rope;
};

/// HF's LlamaForCausalLM ("model." + LlamaModel's keys, "lm_head.weight" unless the config ties
/// it to the embedding).
class LlamaForCausalLM : public CausalLM {
 public:
  explicit LlamaForCausalLM(const LlamaConfig& c);
  using CausalLM::forward;
  Tensor forward(const Tensor& ids, KVCache* cache) override;
  KVCache make_cache(int64_t batch, int64_t max_len) const override;
  int64_t vocab_size() const override { return config.vocab_size; }
  int64_t max_positions() const override { return config.max_position_embeddings; }
  /// Builds the model from dir/config.json and loads dir's weights (see GPT2LMHeadModel).
  static std::shared_ptr<LlamaForCausalLM> from_pretrained(const std::string& dir);
  LlamaModel model;
  std::shared_ptr<nn::Linear> lm_head;  // null when tied to model.embed_tokens
  const LlamaConfig config;
};

}  // namespace ember::models

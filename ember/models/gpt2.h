#pragma once
// GPT-2 with Hugging Face's module names and state_dict keys (GPT2LMHeadModel:
// "transformer.h.0.attn.c_attn.weight", ...), so HF checkpoints load unchanged. The projections
// are GPT-2's Conv1D: weight [in, out], y = x W + b. The head shares the token embedding.
#include <memory>
#include <string>
#include <vector>

#include "ember/models/causal_lm.h"
#include "ember/nn/container.h"
#include "ember/nn/layers.h"
#include "ember/nn/norm.h"
#include "ember/ops/quant.h"

namespace ember::models {

/// config.json's fields (HF names and defaults: the 124M "gpt2").
struct GPT2Config {
  int64_t vocab_size = 50257, n_positions = 1024, n_embd = 768, n_layer = 12, n_head = 12;
  int64_t n_inner = 0;  // 0: 4 * n_embd
  std::string activation_function = "gelu_new";
  double layer_norm_epsilon = 1e-5;
  std::vector<int64_t> eos_token_ids = {50256};
  /// Parses config.json's text; unknown fields are ignored, a wrong type is store::FormatError.
  static GPT2Config from_json(const std::string& text);
  static GPT2Config from_file(const std::string& path);
};

/// GPT-2's linear layer with the weight stored transposed: weight [in, out], bias [out].
class Conv1D : public nn::Module {
 public:
  Conv1D(int64_t out, int64_t in, nn::ParamOptions p = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  /// Weight-only quantization in place (models::quantize walks a model with it), of the weight
  /// as a Linear holds it ([out, in], its transpose), so the state_dict keys, their shapes and
  /// the kernels are nn::Linear::quantize_'s: "weight_int8" + "weight_scale" (bits 8) or
  /// "weight_int4" + "weight_scale" + "weight_zero" in groups of group_size along the input
  /// (bits 4). `weight` becomes undefined; the bias stays as it is.
  void quantize_(int bits, int64_t group_size = 128);
  /// 8 or 4 once quantized, else 0.
  int quantized_bits() const;
  Tensor weight, bias;
  QuantizedInt8 weight_int8;
  QuantizedInt4 weight_int4;
};

class GPT2Attention : public nn::Module {
 public:
  explicit GPT2Attention(const GPT2Config& c);
  using nn::Module::forward;
  /// x [B, T, E]; appends to `cache` as `layer` when given.
  Tensor forward(const Tensor& x, KVCache* cache, int64_t layer);
  Conv1D c_attn, c_proj;
  const int64_t heads;
};

class GPT2MLP : public nn::Module {
 public:
  explicit GPT2MLP(const GPT2Config& c);
  Tensor forward(const Tensor& x) override;
  Conv1D c_fc, c_proj;
  const std::string activation;
};

class GPT2Block : public nn::Module {
 public:
  explicit GPT2Block(const GPT2Config& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& x, KVCache* cache, int64_t layer);
  nn::LayerNorm ln_1;
  GPT2Attention attn;
  nn::LayerNorm ln_2;
  GPT2MLP mlp;
};

/// HF's GPT2Model: embeddings, blocks and the final norm (keys "wte.weight", "h.0...").
class GPT2Model : public nn::Module {
 public:
  explicit GPT2Model(const GPT2Config& c);
  using nn::Module::forward;
  /// The final hidden states [B, T, E] for ids [B, T] at positions cache->length() onwards.
  Tensor forward(const Tensor& ids, KVCache* cache);
  Tensor forward(const Tensor& ids) override { return forward(ids, nullptr); }
  nn::Embedding wte, wpe;
  nn::ModuleList h;
  nn::LayerNorm ln_f;
  const GPT2Config config;
};

/// HF's GPT2LMHeadModel ("transformer." + GPT2Model's keys; lm_head is wte, so the
/// state_dict has no "lm_head.weight" and a checkpoint's copy of it is skipped).
class GPT2LMHeadModel : public CausalLM {
 public:
  explicit GPT2LMHeadModel(const GPT2Config& c);
  using CausalLM::forward;
  Tensor forward(const Tensor& ids, KVCache* cache) override;
  KVCache make_cache(int64_t batch, int64_t max_len) const override;
  int64_t vocab_size() const override { return config.vocab_size; }
  int64_t max_positions() const override { return config.n_positions; }
  /// Builds the model from dir/config.json and loads dir's weights (model.safetensors, sharded
  /// safetensors with model.safetensors.index.json, or pytorch_model.bin). GPT2Model's keys
  /// ("h.0...", as the original checkpoints have them) are taken too.
  static std::shared_ptr<GPT2LMHeadModel> from_pretrained(const std::string& dir);
  GPT2Model transformer;
  const GPT2Config config;
};

}  // namespace ember::models

// The Llama-style decoder: pre-norm layers of rotary grouped-query attention and SwiGLU.
#include "ember/models/llama.h"

#include <filesystem>

#include "ember/models/detail/config_json.h"
#include "ember/models/detail/embedding_out.h"
#include "ember/models/hf_folder.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/unary.h"

namespace ember::models {

LlamaConfig LlamaConfig::from_json(const std::string& text) {
  const std::string w = "Llama config";
  auto j = cfg::parse_config(text, w);
  LlamaConfig c;
  cfg::read(j, "vocab_size", c.vocab_size, w);
  cfg::read(j, "hidden_size", c.hidden_size, w);
  cfg::read(j, "intermediate_size", c.intermediate_size, w);
  cfg::read(j, "num_hidden_layers", c.num_hidden_layers, w);
  cfg::read(j, "num_attention_heads", c.num_attention_heads, w);
  cfg::read(j, "num_key_value_heads", c.num_key_value_heads, w);
  cfg::read(j, "head_dim", c.head_dim, w);
  cfg::read(j, "max_position_embeddings", c.max_position_embeddings, w);
  cfg::read(j, "rms_norm_eps", c.rms_norm_eps, w);
  cfg::read(j, "rope_theta", c.rope_theta, w);
  cfg::read(j, "tie_word_embeddings", c.tie_word_embeddings, w);
  cfg::read(j, "attention_bias", c.attention_bias, w);
  cfg::read(j, "mlp_bias", c.mlp_bias, w);
  cfg::read(j, "hidden_act", c.hidden_act, w);
  if (j.contains("eos_token_id")) {
    c.eos_token_ids.clear();
    cfg::read_ids(j, "eos_token_id", c.eos_token_ids);
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    throw store::FormatError("[models] " + w + ": rope_scaling " + j["rope_scaling"].dump() +
                             " is not supported (expected none)");
  if (c.num_attention_heads < 1 || c.kv_heads() < 1 || c.num_attention_heads % c.kv_heads())
    throw store::FormatError(
        "[models] " + w + ": num_attention_heads " + std::to_string(c.num_attention_heads) +
        " is not a multiple of num_key_value_heads " + std::to_string(c.kv_heads()));
  if (c.head_size() % 2)
    throw store::FormatError("[models] " + w + ": head_dim " + std::to_string(c.head_size()) +
                             " is odd (rotary embeddings rotate pairs)");
  return c;
}

LlamaConfig LlamaConfig::from_file(const std::string& path) {
  return from_json(read_text_file(path));
}

RotaryTables::RotaryTables(int64_t max_positions, int64_t head_dim, double theta) {
  // HF: inv_freq = 1 / theta^(2i / d); the angle of position p is p * inv_freq, repeated for
  // both halves of the head (the rotate-half layout).
  Tensor i = arange(0, head_dim, 2, {.dtype = kF32});
  Tensor inv_freq = 1.0 / pow(full({1}, theta, {.dtype = kF32}), i / double(head_dim));
  Tensor pos = arange(0, max_positions, 1, {.dtype = kF32});
  Tensor freqs = outer(pos, inv_freq);
  Tensor emb = cat({freqs, freqs}, -1);
  cos = ember::cos(emb);
  sin = ember::sin(emb);
}

Tensor RotaryTables::apply(const Tensor& x, int64_t past) const {
  int64_t t = x.size(2), half = x.size(3) / 2;
  Tensor c = cos.narrow(0, past, t), s = sin.narrow(0, past, t);
  Tensor rotated = cat({-x.narrow(3, half, half), x.narrow(3, 0, half)}, -1);
  return x * c + rotated * s;
}

LlamaAttention::LlamaAttention(const LlamaConfig& c)
    : q_proj({.in = c.hidden_size,
              .out = c.num_attention_heads * c.head_size(),
              .bias = c.attention_bias}),
      k_proj({.in = c.hidden_size, .out = c.kv_heads() * c.head_size(), .bias = c.attention_bias}),
      v_proj({.in = c.hidden_size, .out = c.kv_heads() * c.head_size(), .bias = c.attention_bias}),
      o_proj({.in = c.num_attention_heads * c.head_size(),
              .out = c.hidden_size,
              .bias = c.attention_bias}),
      heads(c.num_attention_heads),
      kv_heads(c.kv_heads()),
      head_dim(c.head_size()) {
  register_modules(
      {{"q_proj", q_proj}, {"k_proj", k_proj}, {"v_proj", v_proj}, {"o_proj", o_proj}});
}

Tensor LlamaAttention::forward(const Tensor& x, const RotaryTables& rope, KVCache* cache,
                               int64_t layer) {
  int64_t b = x.size(0), t = x.size(1), rep = heads / kv_heads;
  int64_t past = cache ? cache->length() : 0;
  Tensor q = rope.apply(q_proj(x).reshape({b, t, heads, head_dim}).transpose(1, 2), past);
  Tensor k = rope.apply(k_proj(x).reshape({b, t, kv_heads, head_dim}).transpose(1, 2), past);
  Tensor v = v_proj(x).reshape({b, t, kv_heads, head_dim}).transpose(1, 2);
  if (cache) std::tie(k, v) = cache->append(layer, k, v);
  // Grouped-query attention without copying keys and values: the `rep` query heads that share
  // a key/value head become rep * T rows of one attention over it (HF's repeat_kv order: query
  // head h reads key/value head h / rep).
  q = q.reshape({b, kv_heads, rep * t, head_dim});
  AttentionOptions o;
  if (t > 1) {
    Tensor m = causal_mask(past, t, {.device = x.device()});
    o.attn_mask = m.unsqueeze(0).expand({rep, t, past + t}).reshape({rep * t, past + t});
  }
  Tensor y = scaled_dot_product_attention(q, k, v, o).reshape({b, heads, t, head_dim});
  return o_proj(y.transpose(1, 2).reshape({b, t, heads * head_dim}));
}

LlamaMLP::LlamaMLP(const LlamaConfig& c)
    : gate_proj({.in = c.hidden_size, .out = c.intermediate_size, .bias = c.mlp_bias}),
      up_proj({.in = c.hidden_size, .out = c.intermediate_size, .bias = c.mlp_bias}),
      down_proj({.in = c.intermediate_size, .out = c.hidden_size, .bias = c.mlp_bias}),
      act(c.hidden_act) {
  register_modules({{"gate_proj", gate_proj}, {"up_proj", up_proj}, {"down_proj", down_proj}});
  cfg::check_activation(act, "hidden_act", "Llama config");
}

Tensor LlamaMLP::forward(const Tensor& x) {
  return down_proj(cfg::activation(act, gate_proj(x)) * up_proj(x));
}

LlamaDecoderLayer::LlamaDecoderLayer(const LlamaConfig& c)
    : self_attn(c),
      mlp(c),
      input_layernorm({.shape = {c.hidden_size}, .eps = c.rms_norm_eps}),
      post_attention_layernorm({.shape = {c.hidden_size}, .eps = c.rms_norm_eps}) {
  register_modules({{"self_attn", self_attn},
                    {"mlp", mlp},
                    {"input_layernorm", input_layernorm},
                    {"post_attention_layernorm", post_attention_layernorm}});
}

Tensor LlamaDecoderLayer::forward(const Tensor& x, const RotaryTables& rope, KVCache* cache,
                                  int64_t layer) {
  Tensor h = x + self_attn.forward(input_layernorm(x), rope, cache, layer);
  return h + mlp(post_attention_layernorm(h));
}

LlamaModel::LlamaModel(const LlamaConfig& c)
    : embed_tokens({.num = c.vocab_size, .dim = c.hidden_size}),
      norm({.shape = {c.hidden_size}, .eps = c.rms_norm_eps}),
      config(c),
      rope(c.max_position_embeddings, c.head_size(), c.rope_theta) {
  register_modules({{"embed_tokens", embed_tokens}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    layers.push_back(std::make_shared<LlamaDecoderLayer>(c));
  register_modules({{"layers", layers}, {"norm", norm}});
  register_buffer("rotary_cos", rope.cos, /*persistent=*/false);
  register_buffer("rotary_sin", rope.sin, /*persistent=*/false);
}

Tensor LlamaModel::forward(const Tensor& ids, KVCache* cache) {
  int64_t t = ids.size(1), past = cache ? cache->length() : 0;
  if (past + t > config.max_position_embeddings)
    detail::throw_value("LlamaModel", "positions up to " + std::to_string(past + t) +
                                          " asked for; the rotary tables hold " +
                                          std::to_string(config.max_position_embeddings));
  Tensor x = embed_tokens(ids);
  for (int64_t i = 0; i < static_cast<int64_t>(layers.size()); ++i)
    x = layers.at<LlamaDecoderLayer>(i).forward(x, rope, cache, i);
  if (cache) cache->advance(t);
  return norm(x);
}

LlamaForCausalLM::LlamaForCausalLM(const LlamaConfig& c) : model(c), config(c) {
  register_modules({{"model", model}});
  if (!c.tie_word_embeddings) {
    lm_head = std::make_shared<nn::Linear>(
        nn::LinearOptions{.in = c.hidden_size, .out = c.vocab_size, .bias = false});
    register_module("lm_head", lm_head);
  }
}

Tensor LlamaForCausalLM::forward(const Tensor& ids, KVCache* cache) {
  Tensor h = model.forward(ids, cache);
  return lm_head ? (*lm_head)(h) : model.embed_tokens.attend(h);
}

KVCache LlamaForCausalLM::make_cache(int64_t batch, int64_t max_len) const {
  return KVCache(config.num_hidden_layers, batch, config.kv_heads(), max_len, config.head_size(),
                 priv::embedding_output(model.embed_tokens));
}

std::shared_ptr<LlamaForCausalLM> LlamaForCausalLM::from_pretrained(const std::string& dir) {
  auto m = std::make_shared<LlamaForCausalLM>(
      LlamaConfig::from_file((std::filesystem::path(dir) / "config.json").string()));
  bool tied = m->config.tie_word_embeddings;
  load_hf_weights(*m, dir, [tied](const std::string& k) -> std::optional<std::string> {
    // Older checkpoints store the rotary frequencies, which the model recomputes.
    if (k.find("rotary_emb.inv_freq") != std::string::npos) return std::nullopt;
    if (tied && k == "lm_head.weight") return std::nullopt;
    return k;
  });
  m->eval();
  return m;
}

}  // namespace ember::models

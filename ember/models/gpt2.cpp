// GPT-2: pre-norm blocks of causal self-attention and a GELU MLP over learned positions.
#include "ember/models/gpt2.h"

#include <cmath>
#include <filesystem>
#include <regex>

#include "ember/error.h"
#include "ember/models/detail/config_json.h"
#include "ember/models/detail/embedding_out.h"
#include "ember/models/hf_folder.h"
#include "ember/nn/init.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn.h"
#include "ember/ops/quant.h"
#include "ember/ops/unary.h"

namespace ember::models {

GPT2Config GPT2Config::from_json(const std::string& text) {
  auto j = cfg::parse_config(text, "GPT-2 config");
  GPT2Config c;
  const std::string w = "GPT-2 config";
  cfg::read(j, "vocab_size", c.vocab_size, w);
  cfg::read(j, "n_positions", c.n_positions, w);
  cfg::read(j, "n_embd", c.n_embd, w);
  cfg::read(j, "n_layer", c.n_layer, w);
  cfg::read(j, "n_head", c.n_head, w);
  cfg::read(j, "n_inner", c.n_inner, w);
  cfg::read(j, "activation_function", c.activation_function, w);
  cfg::read(j, "layer_norm_epsilon", c.layer_norm_epsilon, w);
  if (j.contains("eos_token_id")) {
    c.eos_token_ids.clear();
    cfg::read_ids(j, "eos_token_id", c.eos_token_ids);
  }
  if (c.n_embd % c.n_head != 0)
    throw store::FormatError("[models] GPT-2 config: n_embd " + std::to_string(c.n_embd) +
                             " is not a multiple of n_head " + std::to_string(c.n_head));
  return c;
}

GPT2Config GPT2Config::from_file(const std::string& path) {
  return from_json(read_text_file(path));
}

Conv1D::Conv1D(int64_t out, int64_t in, nn::ParamOptions p) {
  TensorOptions o{.dtype = p.dtype, .device = p.device};
  // HF's initialisation: N(0, 0.02) weights, zero biases.
  weight = randn({in, out}, o) * 0.02;
  bias = zeros({out}, o);
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

Tensor Conv1D::forward(const Tensor& x) {
  if (weight_int8.values.defined()) return linear(x, weight_int8, bias);
  if (weight_int4.values.defined()) return linear(x, weight_int4, bias);
  return matmul(x, weight) + bias;
}

std::string Conv1D::extra_repr() const {
  const int bits = quantized_bits();
  if (bits == 0)
    return "nf=" + std::to_string(weight.size(1)) + ", nx=" + std::to_string(weight.size(0));
  const Tensor& scale = bits == 8 ? weight_int8.scale : weight_int4.scale;
  const int64_t in = bits == 8 ? weight_int8.values.size(1) : 2 * weight_int4.values.size(1);
  return "nf=" + std::to_string(scale.size(0)) + ", nx=" + std::to_string(in) + ", weight=int" +
         std::to_string(bits) +
         (bits == 4 ? " (group " + std::to_string(weight_int4.group_size) + ")" : "");
}

void Conv1D::quantize_(int bits, int64_t group_size) {
  if (quantized_bits()) ember::detail::throw_value("Conv1D", "the weight is already quantized");
  if (bits != 8 && bits != 4)
    ember::detail::throw_value("Conv1D", "expected bits 8 or 4, found " + std::to_string(bits));
  const Tensor w = weight.t().contiguous();  // [out, in], as a Linear holds it
  if (bits == 8) weight_int8 = quantize_int8(w);
  else weight_int4 = quantize_int4(w, group_size);
  unregister("weight");
  weight = Tensor();
  if (bits == 8) {
    register_buffer("weight_int8", weight_int8.values);
    register_buffer("weight_scale", weight_int8.scale);
  } else {
    register_buffer("weight_int4", weight_int4.values);
    register_buffer("weight_scale", weight_int4.scale);
    register_buffer("weight_zero", weight_int4.zero);
  }
}

int Conv1D::quantized_bits() const {
  return weight_int8.values.defined() ? 8 : weight_int4.values.defined() ? 4 : 0;
}

GPT2Attention::GPT2Attention(const GPT2Config& c)
    : c_attn(3 * c.n_embd, c.n_embd), c_proj(c.n_embd, c.n_embd), heads(c.n_head) {
  register_modules({{"c_attn", c_attn}, {"c_proj", c_proj}});
}

Tensor GPT2Attention::forward(const Tensor& x, KVCache* cache, int64_t layer) {
  int64_t b = x.size(0), t = x.size(1), e = x.size(2), d = e / heads;
  auto qkv = split(c_attn(x), e, -1);
  auto heads_of = [&](const Tensor& y) { return y.reshape({b, t, heads, d}).transpose(1, 2); };
  Tensor q = heads_of(qkv[0]), k = heads_of(qkv[1]), v = heads_of(qkv[2]);
  int64_t past = cache ? cache->length() : 0;
  if (cache) std::tie(k, v) = cache->append(layer, k, v);
  AttentionOptions o;
  // Without earlier positions the mask is the plain causal one: `is_causal` lets a backend take
  // its fused causal kernel (cuda's never reads a mask tensor); with a cache, the offset mask.
  if (t > 1 && past == 0) o.is_causal = true;
  else if (t > 1) o.attn_mask = causal_mask(past, t, {.device = x.device()});
  Tensor y = scaled_dot_product_attention(q, k, v, o);
  return c_proj(y.transpose(1, 2).reshape({b, t, e}));
}

GPT2MLP::GPT2MLP(const GPT2Config& c)
    : c_fc(c.n_inner ? c.n_inner : 4 * c.n_embd, c.n_embd),
      c_proj(c.n_embd, c.n_inner ? c.n_inner : 4 * c.n_embd),
      activation(c.activation_function) {
  register_modules({{"c_fc", c_fc}, {"c_proj", c_proj}});
  cfg::check_activation(activation, "activation_function", "GPT-2 config");
}

Tensor GPT2MLP::forward(const Tensor& x) {
  return c_proj(cfg::activation(activation, c_fc(x)));
}

GPT2Block::GPT2Block(const GPT2Config& c)
    : ln_1({.shape = {c.n_embd}, .eps = c.layer_norm_epsilon}),
      attn(c),
      ln_2({.shape = {c.n_embd}, .eps = c.layer_norm_epsilon}),
      mlp(c) {
  register_modules({{"ln_1", ln_1}, {"attn", attn}, {"ln_2", ln_2}, {"mlp", mlp}});
}

Tensor GPT2Block::forward(const Tensor& x, KVCache* cache, int64_t layer) {
  Tensor h = x + attn.forward(ln_1(x), cache, layer);
  return h + mlp(ln_2(h));
}

GPT2Model::GPT2Model(const GPT2Config& c)
    : wte({.num = c.vocab_size, .dim = c.n_embd}),
      wpe({.num = c.n_positions, .dim = c.n_embd}),
      ln_f({.shape = {c.n_embd}, .eps = c.layer_norm_epsilon}),
      config(c) {
  register_modules({{"wte", wte}, {"wpe", wpe}});
  for (int64_t i = 0; i < c.n_layer; ++i) h.push_back(std::make_shared<GPT2Block>(c));
  register_modules({{"h", h}, {"ln_f", ln_f}});
}

Tensor GPT2Model::forward(const Tensor& ids, KVCache* cache) {
  int64_t t = ids.size(1), past = cache ? cache->length() : 0;
  if (past + t > config.n_positions)
    detail::throw_value("GPT2Model", "positions up to " + std::to_string(past + t) +
                                         " asked for; the model has " +
                                         std::to_string(config.n_positions));
  Tensor pos = arange(past, past + t, 1, {.dtype = kI64, .device = ids.device()});
  Tensor x = wte(ids) + wpe(pos);
  for (int64_t i = 0; i < static_cast<int64_t>(h.size()); ++i)
    x = h.at<GPT2Block>(i).forward(x, cache, i);
  if (cache) cache->advance(t);
  return ln_f(x);
}

GPT2LMHeadModel::GPT2LMHeadModel(const GPT2Config& c) : transformer(c), config(c) {
  register_modules({{"transformer", transformer}});
}

Tensor GPT2LMHeadModel::forward(const Tensor& ids, KVCache* cache) {
  return transformer.wte.attend(transformer.forward(ids, cache));
}

KVCache GPT2LMHeadModel::make_cache(int64_t batch, int64_t max_len) const {
  return KVCache(config.n_layer, batch, config.n_head, max_len, config.n_embd / config.n_head,
                 priv::embedding_output(transformer.wte));
}

std::shared_ptr<GPT2LMHeadModel> GPT2LMHeadModel::from_pretrained(const std::string& dir) {
  auto m = std::make_shared<GPT2LMHeadModel>(
      GPT2Config::from_file((std::filesystem::path(dir) / "config.json").string()));
  static const std::regex mask_buffer(R"(\.attn\.(masked_)?bias$)");
  load_hf_weights(*m, dir, [](const std::string& k) -> std::optional<std::string> {
    if (k == "lm_head.weight" || std::regex_search(k, mask_buffer)) return std::nullopt;
    if (k.rfind("transformer.", 0) == 0) return k;
    return "transformer." + k;
  });
  m->eval();
  return m;
}

}  // namespace ember::models

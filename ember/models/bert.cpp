// The BERT encoder: post-norm layers of bidirectional self-attention and a GELU MLP over
// word, position and token-type embeddings.
#include "ember/models/bert.h"

#include <filesystem>
#include <regex>

#include "ember/models/detail/config_json.h"
#include "ember/models/hf_folder.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/nn.h"
#include "ember/ops/unary.h"

namespace ember::models {

BertConfig BertConfig::from_json(const std::string& text) {
  const std::string w = "BERT config";
  auto j = cfg::parse_config(text, w);
  BertConfig c;
  cfg::read(j, "vocab_size", c.vocab_size, w);
  cfg::read(j, "hidden_size", c.hidden_size, w);
  cfg::read(j, "num_hidden_layers", c.num_hidden_layers, w);
  cfg::read(j, "num_attention_heads", c.num_attention_heads, w);
  cfg::read(j, "intermediate_size", c.intermediate_size, w);
  cfg::read(j, "max_position_embeddings", c.max_position_embeddings, w);
  cfg::read(j, "type_vocab_size", c.type_vocab_size, w);
  cfg::read(j, "pad_token_id", c.pad_token_id, w);
  cfg::read(j, "hidden_act", c.hidden_act, w);
  cfg::read(j, "layer_norm_eps", c.layer_norm_eps, w);
  if (c.num_attention_heads < 1 || c.hidden_size % c.num_attention_heads)
    throw store::FormatError("[models] " + w + ": hidden_size " + std::to_string(c.hidden_size) +
                             " is not a multiple of num_attention_heads " +
                             std::to_string(c.num_attention_heads));
  cfg::check_activation(c.hidden_act, "hidden_act", w);
  return c;
}

BertConfig BertConfig::from_file(const std::string& path) {
  return from_json(read_text_file(path));
}

BertEmbeddings::BertEmbeddings(const BertConfig& c)
    : word_embeddings({.num = c.vocab_size, .dim = c.hidden_size, .padding_idx = c.pad_token_id}),
      position_embeddings({.num = c.max_position_embeddings, .dim = c.hidden_size}),
      token_type_embeddings({.num = c.type_vocab_size, .dim = c.hidden_size}),
      LayerNorm({.shape = {c.hidden_size}, .eps = c.layer_norm_eps}) {
  register_modules({{"word_embeddings", word_embeddings},
                    {"position_embeddings", position_embeddings},
                    {"token_type_embeddings", token_type_embeddings},
                    {"LayerNorm", LayerNorm}});
}

Tensor BertEmbeddings::forward(const Tensor& ids, const Tensor& token_types) {
  int64_t s = ids.size(1);
  if (s > position_embeddings.options.num)
    detail::throw_value("BertModel",
                        "a sequence of " + std::to_string(s) + " tokens; the model has " +
                            std::to_string(position_embeddings.options.num) + " positions");
  Tensor pos = arange(0, s, 1, {.dtype = kI64, .device = ids.device()});
  Tensor types = token_types.defined() ? token_types : zeros_like(ids);
  return LayerNorm(word_embeddings(ids) + position_embeddings(pos) + token_type_embeddings(types));
}

BertSelfAttention::BertSelfAttention(const BertConfig& c)
    : query({.in = c.hidden_size, .out = c.hidden_size}),
      key({.in = c.hidden_size, .out = c.hidden_size}),
      value({.in = c.hidden_size, .out = c.hidden_size}),
      heads(c.num_attention_heads) {
  register_modules({{"query", query}, {"key", key}, {"value", value}});
}

Tensor BertSelfAttention::forward(const Tensor& x, const Tensor& mask) {
  int64_t b = x.size(0), s = x.size(1), e = x.size(2), d = e / heads;
  auto split_heads = [&](const Tensor& y) { return y.reshape({b, s, heads, d}).transpose(1, 2); };
  AttentionOptions o;
  o.attn_mask = mask;
  Tensor y = scaled_dot_product_attention(split_heads(query(x)), split_heads(key(x)),
                                          split_heads(value(x)), o);
  return y.transpose(1, 2).reshape({b, s, e});
}

BertResidualOutput::BertResidualOutput(int64_t in, const BertConfig& c)
    : dense({.in = in, .out = c.hidden_size}),
      LayerNorm({.shape = {c.hidden_size}, .eps = c.layer_norm_eps}) {
  register_modules({{"dense", dense}, {"LayerNorm", LayerNorm}});
}

Tensor BertResidualOutput::forward(const Tensor& x, const Tensor& residual) {
  return LayerNorm(dense(x) + residual);
}

BertAttention::BertAttention(const BertConfig& c) : self(c), output(c.hidden_size, c) {
  register_modules({{"self", self}, {"output", output}});
}

Tensor BertAttention::forward(const Tensor& x, const Tensor& mask) {
  return output.forward(self.forward(x, mask), x);
}

BertIntermediate::BertIntermediate(const BertConfig& c)
    : dense({.in = c.hidden_size, .out = c.intermediate_size}), act(c.hidden_act) {
  register_modules({{"dense", dense}});
}

Tensor BertIntermediate::forward(const Tensor& x) {
  return cfg::activation(act, dense(x));
}

BertLayer::BertLayer(const BertConfig& c)
    : attention(c), intermediate(c), output(c.intermediate_size, c) {
  register_modules({{"attention", attention}, {"intermediate", intermediate}, {"output", output}});
}

Tensor BertLayer::forward(const Tensor& x, const Tensor& mask) {
  Tensor a = attention.forward(x, mask);
  return output.forward(intermediate(a), a);
}

BertEncoder::BertEncoder(const BertConfig& c) {
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layer.push_back(std::make_shared<BertLayer>(c));
  register_modules({{"layer", layer}});
}

Tensor BertEncoder::forward(const Tensor& x, const Tensor& mask) {
  Tensor h = x;
  for (int64_t i = 0; i < static_cast<int64_t>(layer.size()); ++i)
    h = layer.at<BertLayer>(i).forward(h, mask);
  return h;
}

BertPooler::BertPooler(const BertConfig& c) : dense({.in = c.hidden_size, .out = c.hidden_size}) {
  register_modules({{"dense", dense}});
}

Tensor BertPooler::forward(const Tensor& x) { return tanh(dense(x.select(1, 0))); }

BertModel::BertModel(const BertConfig& c) : embeddings(c), encoder(c), config(c) {
  register_modules({{"embeddings", embeddings}, {"encoder", encoder}});
  if (c.add_pooling_layer) {
    pooler = std::make_shared<BertPooler>(c);
    register_module("pooler", pooler);
  }
}

BertModelOutput BertModel::forward(const BertInputs& in) {
  Tensor mask;
  if (in.attention_mask.defined()) {
    int64_t b = in.attention_mask.size(0), s = in.attention_mask.size(1);
    mask = (in.attention_mask != 0).reshape({b, 1, 1, s});
  }
  Tensor h = encoder.forward(embeddings.forward(in.input_ids, in.token_type_ids), mask);
  return {h, pooler ? (*pooler)(h) : Tensor()};
}

std::shared_ptr<BertModel> BertModel::from_pretrained(const std::string& dir,
                                                      bool add_pooling_layer) {
  BertConfig c = BertConfig::from_file((std::filesystem::path(dir) / "config.json").string());
  c.add_pooling_layer = add_pooling_layer;
  auto m = std::make_shared<BertModel>(c);
  static const std::regex gamma(R"(LayerNorm\.gamma$)"), beta(R"(LayerNorm\.beta$)");
  load_hf_weights(*m, dir, [&](const std::string& key) -> std::optional<std::string> {
    std::string k = key.rfind("bert.", 0) == 0 ? key.substr(5) : key;
    // Task heads (cls.*, a classifier) and the position-id buffer are not BertModel's.
    if (k.rfind("embeddings.", 0) != 0 && k.rfind("encoder.", 0) != 0 && k.rfind("pooler.", 0) != 0)
      return std::nullopt;
    if (k == "embeddings.position_ids") return std::nullopt;
    if (!add_pooling_layer && k.rfind("pooler.", 0) == 0) return std::nullopt;
    k = std::regex_replace(k, gamma, "LayerNorm.weight");
    return std::regex_replace(k, beta, "LayerNorm.bias");
  });
  m->eval();
  return m;
}

}  // namespace ember::models

#pragma once
// A BERT-style encoder with Hugging Face's module names and state_dict keys (BertModel:
// "encoder.layer.0.attention.self.query.weight", ...). from_pretrained also takes the keys of
// BertForMaskedLM / BertForPreTraining checkpoints ("bert." prefix, heads skipped) and the old
// LayerNorm "gamma"/"beta" names.
#include <memory>
#include <string>

#include "ember/nn/container.h"
#include "ember/nn/layers.h"
#include "ember/nn/norm.h"

namespace ember::models {

/// config.json's fields (HF names and defaults: bert-base).
struct BertConfig {
  int64_t vocab_size = 30522, hidden_size = 768, num_hidden_layers = 12;
  int64_t num_attention_heads = 12, intermediate_size = 3072;
  int64_t max_position_embeddings = 512, type_vocab_size = 2, pad_token_id = 0;
  std::string hidden_act = "gelu";
  double layer_norm_eps = 1e-12;
  bool add_pooling_layer = true;  // not a config.json field: BertModel's constructor argument
  static BertConfig from_json(const std::string& text);
  static BertConfig from_file(const std::string& path);
};

/// BertModel's inputs: token ids [B, S]; token types [B, S] (zeros when undefined);
/// attention_mask [B, S], 1 (or true) for tokens to attend to, 0 for padding (all when undefined).
struct BertInputs {
  Tensor input_ids, token_type_ids, attention_mask;
};

struct BertModelOutput {
  Tensor last_hidden_state;  // [B, S, hidden]
  Tensor pooler_output;      // [B, hidden]: tanh(dense(first token)); undefined without a pooler
};

class BertEmbeddings : public nn::Module {
 public:
  explicit BertEmbeddings(const BertConfig& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& ids, const Tensor& token_types);
  nn::Embedding word_embeddings, position_embeddings, token_type_embeddings;
  nn::LayerNorm LayerNorm;  // NOLINT: HF's name
};

class BertSelfAttention : public nn::Module {
 public:
  explicit BertSelfAttention(const BertConfig& c);
  using nn::Module::forward;
  /// mask: bool [B, 1, 1, S] (true = attend) or undefined.
  Tensor forward(const Tensor& x, const Tensor& mask);
  nn::Linear query, key, value;
  const int64_t heads;
};

/// A dense layer, then LayerNorm of (its output + the residual): HF's BertSelfOutput and
/// BertOutput.
class BertResidualOutput : public nn::Module {
 public:
  BertResidualOutput(int64_t in, const BertConfig& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& x, const Tensor& residual);
  nn::Linear dense;
  nn::LayerNorm LayerNorm;  // NOLINT: HF's name
};

class BertAttention : public nn::Module {
 public:
  explicit BertAttention(const BertConfig& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& x, const Tensor& mask);
  BertSelfAttention self;
  BertResidualOutput output;
};

/// act(dense(x)).
class BertIntermediate : public nn::Module {
 public:
  explicit BertIntermediate(const BertConfig& c);
  Tensor forward(const Tensor& x) override;
  nn::Linear dense;
  const std::string act;
};

class BertLayer : public nn::Module {
 public:
  explicit BertLayer(const BertConfig& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& x, const Tensor& mask);
  BertAttention attention;
  BertIntermediate intermediate;
  BertResidualOutput output;
};

class BertEncoder : public nn::Module {
 public:
  explicit BertEncoder(const BertConfig& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& x, const Tensor& mask);
  nn::ModuleList layer;
};

/// tanh(dense(first token's state)).
class BertPooler : public nn::Module {
 public:
  explicit BertPooler(const BertConfig& c);
  Tensor forward(const Tensor& x) override;
  nn::Linear dense;
};

class BertModel : public nn::Module {
 public:
  explicit BertModel(const BertConfig& c);
  using nn::Module::forward;
  BertModelOutput forward(const BertInputs& in);
  /// last_hidden_state for ids alone.
  Tensor forward(const Tensor& ids) override {
    return forward(BertInputs{ids, {}, {}}).last_hidden_state;
  }
  static std::shared_ptr<BertModel> from_pretrained(const std::string& dir,
                                                    bool add_pooling_layer = true);
  BertEmbeddings embeddings;
  BertEncoder encoder;
  std::shared_ptr<BertPooler> pooler;  // null without a pooler
  const BertConfig config;
};

}  // namespace ember::models

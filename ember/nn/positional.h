#pragma once
// Position information for sequence models: SinusoidalPositionalEncoding ("Attention is all you
// need"), LearnedPositionalEncoding (a trained table) and RotaryEncoding (RoPE, as in RoFormer,
// Llama and Burn). Each takes an `offset`: the position of the first element, for decoding one
// step at a time against a cache.
#include <string>

#include "ember/nn/module.h"

namespace ember::nn {

/// A module applied from a position on: forward(x) is forward(x, 0).
class PositionalModule : public Module {
 public:
  EMBER_MODULE_ARROW(PositionalModule)
  using Module::operator();
  Tensor forward(const Tensor& x) override { return forward(x, 0); }
  /// x with the encoding of positions offset, offset + 1, ... along its sequence dim.
  virtual Tensor forward(const Tensor& x, int64_t offset) = 0;
  Tensor operator()(const Tensor& x, int64_t offset) { return forward(x, offset); }
};

struct SinusoidalPositionalEncodingOptions {
  int64_t d_model = 0;  // even
  int64_t max_len = 5000;
  double max_timescale = 10000.0;
  bool batch_first = false;  // x [N, S, E] instead of [S, N, E]
  ParamOptions param = {};   // dtype and device of the table
};

/// x + PE[offset : offset + S] with PE[p, 2i] = sin(p / max_timescale^(2i / d_model)) and
/// PE[p, 2i + 1] = cos(the same). x is [S, N, E], [N, S, E] (batch first) or [S, E]. The table
/// [max_len, d_model] is the non-persistent buffer "pe": moved by to(), absent from state_dict.
/// The output keeps x's floating dtype. No dropout (torch's tutorial adds one: follow it with
/// nn::Dropout).
class SinusoidalPositionalEncoding : public PositionalModule {
 public:
  EMBER_MODULE_ARROW(SinusoidalPositionalEncoding)
  explicit SinusoidalPositionalEncoding(const SinusoidalPositionalEncodingOptions& o);
  using PositionalModule::forward;
  Tensor forward(const Tensor& x, int64_t offset) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  Tensor pe;
  const SinusoidalPositionalEncodingOptions options;
};

struct LearnedPositionalEncodingOptions {
  int64_t max_len = 0, d_model = 0;
  bool batch_first = false;  // x [N, S, E] instead of [S, N, E]
  ParamOptions param = {};
};

/// x + weight[offset : offset + S]: a trained table (GPT-2's "wpe"), parameter "weight"
/// [max_len, d_model] drawn from N(0, 1) like nn::Embedding. Layouts as above.
class LearnedPositionalEncoding : public PositionalModule {
 public:
  EMBER_MODULE_ARROW(LearnedPositionalEncoding)
  explicit LearnedPositionalEncoding(const LearnedPositionalEncodingOptions& o);
  using PositionalModule::forward;
  Tensor forward(const Tensor& x, int64_t offset) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight;
  const LearnedPositionalEncodingOptions options;
};

struct RotaryEncodingOptions {
  int64_t d_model = 0;              // the rotated (head) dim, even
  int64_t max_sequence_length = 0;  // offset + S may not exceed it
  double theta = 10000.0;
  /// true: rotate pairs (2i, 2i + 1), as the RoFormer paper, Meta's Llama and Burn do.
  /// false: rotate pairs (i, i + d_model / 2), HF transformers' rotate_half convention.
  bool interleaved = true;
  ParamOptions param = {};  // dtype and device of the tables
};

/// Rotary position embedding: pair i of position p turns by angle p * theta^(-2i / d_model).
/// x is [..., S, d_model] (e.g. queries [N, heads, S, D]); the tables "cos_cached" and
/// "sin_cached" [max_sequence_length, d_model / 2] are non-persistent buffers (state_dict is
/// empty). The output keeps x's floating dtype, as HF's Llama casts cos and sin to it.
class RotaryEncoding : public PositionalModule {
 public:
  EMBER_MODULE_ARROW(RotaryEncoding)
  explicit RotaryEncoding(const RotaryEncodingOptions& o);
  using PositionalModule::forward;
  Tensor forward(const Tensor& x, int64_t offset) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  Tensor cos_cached, sin_cached;
  const RotaryEncodingOptions options;
};

}  // namespace ember::nn

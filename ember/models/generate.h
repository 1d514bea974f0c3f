#pragma once
// Text generation for the decoders: the prompt runs once, then one token a step through the
// key/value cache; greedy decoding or sampling (temperature, top-k, top-p) from a seeded
// generator, stop tokens and a streaming callback.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/models/causal_lm.h"

namespace ember::models {

struct GenerationOptions {
  int64_t max_new_tokens = 32;
  /// false: the most likely token each step (greedy). true: a draw from the distribution that
  /// temperature, top_k and top_p shape.
  bool do_sample = false;
  double temperature = 1.0;  // > 0; logits are divided by it
  int64_t top_k = 0;         // keep the k most likely tokens (0: all)
  double top_p = 1.0;        // keep the smallest set whose probability reaches top_p
  uint64_t seed = 0;         // the same seed, options and model give the same tokens
  /// Generation ends after any of these tokens (which is kept in the output).
  std::vector<int64_t> stop_tokens;
  /// Called with each new token as it is chosen; returning false ends generation.
  std::function<bool(int64_t token)> on_token;
  /// Recompute the whole sequence each step instead of using the cache (for checking).
  bool use_cache = true;
};

/// The new tokens (without the prompt) that `model` generates after `prompt`.
std::vector<int64_t> generate(CausalLM& model, const std::vector<int64_t>& prompt,
                              const GenerationOptions& options = {});

/// The decoder a model folder holds, by config.json's model_type: "gpt2" (GPT2LMHeadModel) or
/// "llama" / "mistral" (LlamaForCausalLM); store::FormatError for another.
std::shared_ptr<CausalLM> causal_lm_from_pretrained(const std::string& dir);
/// The stop tokens config.json names (eos_token_id, one or a list).
std::vector<int64_t> eos_tokens(const CausalLM& model);

/// Picks the next token from one row of logits as `options` says; `state` is the generator's
/// state (seeded from options.seed by generate).
int64_t choose_token(const std::vector<float>& logits, const GenerationOptions& options,
                     uint64_t& state);

}  // namespace ember::models

#pragma once
// What the text decoders (GPT-2, Llama) share: a key/value cache preallocated to the longest
// sequence, and the CausalLM interface that generation drives.
#include <cstdint>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/ops/creation.h"

namespace ember::models {

/// Keys and values of every layer, [batch, kv_heads, max_len, head_dim] each, allocated once.
/// A step writes its new positions in place and attends over the filled prefix, so the prefix
/// is never recomputed.
class KVCache {
 public:
  KVCache() = default;
  KVCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t max_len, int64_t head_dim,
          TensorOptions o = {});
  /// Positions filled so far (the next step's first position).
  int64_t length() const { return length_; }
  int64_t max_length() const { return max_len_; }
  /// Writes k and v ([batch, kv_heads, T, head_dim]) of `layer` at length() and returns the
  /// filled views [batch, kv_heads, length() + T, head_dim]. Throws ValueError past max_length.
  std::pair<Tensor, Tensor> append(int64_t layer, const Tensor& k, const Tensor& v);
  /// Moves length() on by `t` once every layer has appended its step.
  void advance(int64_t t);
  /// Forgets every position (the storage stays).
  void reset() { length_ = 0; }

 private:
  std::vector<Tensor> k_, v_;
  int64_t max_len_ = 0, length_ = 0;
};

/// A decoder language model: token ids [batch, T] to next-token logits [batch, T, vocab].
class CausalLM : public nn::Module {
 public:
  /// Logits for ids at positions cache->length() onwards, appending their keys and values to
  /// the cache (and advancing it); without a cache, the positions start at 0.
  virtual Tensor forward(const Tensor& ids, KVCache* cache) = 0;
  Tensor forward(const Tensor& ids) override { return forward(ids, nullptr); }
  /// An empty cache for `batch` sequences of at most `max_len` positions.
  virtual KVCache make_cache(int64_t batch, int64_t max_len) const = 0;
  virtual int64_t vocab_size() const = 0;
  /// The longest sequence the model takes (learned positions), or 0 for no limit.
  virtual int64_t max_positions() const { return 0; }
};

/// The additive-free causal mask for T new positions after `past` cached ones: [T, past + T]
/// bool, true where query t may see key s (s <= past + t).
Tensor causal_mask(int64_t past, int64_t t, TensorOptions o = {});

}  // namespace ember::models

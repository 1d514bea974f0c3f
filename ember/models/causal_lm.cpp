// The key/value cache of the decoders.
#include "ember/models/causal_lm.h"

#include <string>

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/ops/binary.h"

namespace ember::models {

KVCache::KVCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t max_len, int64_t head_dim,
                 TensorOptions o)
    : max_len_(max_len) {
  if (layers < 1 || batch < 1 || kv_heads < 1 || max_len < 1 || head_dim < 1)
    detail::throw_value("KVCache", "expected positive sizes, got layers " + std::to_string(layers) +
                                       ", batch " + std::to_string(batch) + ", max_len " +
                                       std::to_string(max_len));
  for (int64_t l = 0; l < layers; ++l) {
    k_.push_back(zeros({batch, kv_heads, max_len, head_dim}, o));
    v_.push_back(zeros({batch, kv_heads, max_len, head_dim}, o));
  }
}

std::pair<Tensor, Tensor> KVCache::append(int64_t layer, const Tensor& k, const Tensor& v) {
  if (layer < 0 || layer >= static_cast<int64_t>(k_.size()))
    detail::throw_index("KVCache",
                        "layer " + std::to_string(layer) + " of " + std::to_string(k_.size()));
  int64_t t = k.size(2);
  if (length_ + t > max_len_)
    detail::throw_value("KVCache", "the cache holds " + std::to_string(max_len_) + " positions; " +
                                       std::to_string(length_) + " filled, " + std::to_string(t) +
                                       " more asked for");
  NoGradGuard no_grad;
  k_[layer].narrow(2, length_, t).copy_(k);
  v_[layer].narrow(2, length_, t).copy_(v);
  return {k_[layer].narrow(2, 0, length_ + t), v_[layer].narrow(2, 0, length_ + t)};
}

void KVCache::advance(int64_t t) { length_ += t; }

Tensor causal_mask(int64_t past, int64_t t, TensorOptions o) {
  TensorOptions idx{.dtype = kI64, .device = o.device};
  Tensor q = arange(past, past + t, 1, idx).unsqueeze(1);
  Tensor s = arange(0, past + t, 1, idx).unsqueeze(0);
  return s <= q;
}

}  // namespace ember::models

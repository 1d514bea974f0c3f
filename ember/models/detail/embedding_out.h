#pragma once
// The dtype and device of a token embedding's output (private: the decoders size their KV cache
// with it). A quantized table dequantizes to f32.
#include "ember/nn/layers.h"

namespace ember::models::priv {

inline TensorOptions embedding_output(const nn::Embedding& e) {
  if (e.weight.defined()) return {e.weight.dtype(), e.weight.device()};
  const Tensor& s = e.weight_int8.scale.defined() ? e.weight_int8.scale : e.weight_int4.scale;
  return {DType::F32, s.device()};
}

}  // namespace ember::models::priv

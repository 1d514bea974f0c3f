#pragma once
// Weight-only quantization of a model for inference. models::quantize converts, in place, every
// nn::Linear and GPT-2 Conv1D (and nn::Embedding) of a module tree to int8 or int4 weights (the
// schemes are in ember/ops/quant.h); the model's code stays as it is and its forward runs the
// quantized products. The state_dict then holds "<layer>.weight_int8" + "<layer>.weight_scale" (int8) or
// "<layer>.weight_int4" + "<layer>.weight_scale" + "<layer>.weight_zero" (int4) instead of
// "<layer>.weight", so a quantized checkpoint saved with store::save_safetensors loads back into
// a model quantized the same way, and loading it into a float model (or the reverse) is an error
// naming the keys.
#include <cstdint>
#include <string>
#include <vector>

#include "ember/nn/module.h"

namespace ember::models {

struct QuantizeOptions {
  int bits = 8;              // 8: int8, one scale per output row; 4: int4 in groups
  int64_t group_size = 128;  // bits 4: input elements per scale and zero point (even; 32, 128)
  bool embeddings = true;    // nn::Embedding tables too (int8 per row, int4 per group of a row)
  /// Module names (as named_modules spells them, "lm_head", "model.layers.0") kept in float,
  /// with everything below them.
  std::vector<std::string> skip = {};
};

/// Quantizes every nn::Linear and models::Conv1D (and, with o.embeddings, nn::Embedding) of
/// `model` not skipped, in place; returns the names of the converted modules. Everything is
/// checked first (bits, group sizes dividing each layer's input size, skip names that exist,
/// layers not yet quantized), so on error nothing changes; the error names the module.
std::vector<std::string> quantize(nn::Module& model, const QuantizeOptions& o = {});

/// Bytes of a module's state_dict (parameters and persistent buffers, a shared tensor once).
int64_t state_bytes(const nn::Module& model);

}  // namespace ember::models

#pragma once
// Vision Transformer (Dosovitskiy et al.) with torchvision's module names: class_token,
// conv_proj (the patch embedding), encoder.pos_embedding, encoder.layers.encoder_layer_N (ln_1,
// self_attention, ln_2, mlp.0, mlp.3), encoder.ln, heads.head.
#include <memory>
#include <optional>
#include <string>

#include "ember/nn/attention.h"
#include "ember/nn/container.h"
#include "ember/nn/conv.h"
#include "ember/nn/layers.h"
#include "ember/nn/norm.h"
#include "ember/models/vision_config.h"

namespace ember::models {

/// ViT-B/16's defaults.
struct ViTConfig {
  int64_t image_size = 224, patch_size = 16;
  int64_t num_layers = 12, num_heads = 12, hidden_dim = 768, mlp_dim = 3072;
  double dropout = 0.0, attention_dropout = 0.0;
  int64_t num_classes = 1000;
  /// A pre-logits Linear + Tanh of this size before the head ("heads.pre_logits").
  std::optional<int64_t> representation_size;
  double norm_eps = 1e-6;
  nn::ParamOptions param = {};
};

/// Pre-norm transformer block: x + attn(ln_1(x)), then + mlp(ln_2(.)).
class EncoderBlock : public nn::Module {
 public:
  explicit EncoderBlock(const ViTConfig& c);
  Tensor forward(const Tensor& x) override;
  nn::LayerNorm ln_1;
  nn::MultiheadAttention self_attention;
  nn::Dropout dropout;
  nn::LayerNorm ln_2;
  nn::Sequential mlp;  // Linear, GELU, Dropout, Linear, Dropout
};

/// Adds the learned position embedding [1, seq, hidden] and runs the blocks and a final norm.
class ViTEncoder : public nn::Module {
 public:
  ViTEncoder(int64_t seq_length, const ViTConfig& c);
  Tensor forward(const Tensor& x) override;
  Tensor pos_embedding;
  nn::Dropout dropout;
  nn::ModuleDict layers;  // "encoder_layer_0", ...
  nn::LayerNorm ln;
};

class VisionTransformer : public nn::Module {
 public:
  explicit VisionTransformer(const ViTConfig& c = {});
  /// Logits [N, num_classes] of images [N, 3, image_size, image_size].
  Tensor forward(const Tensor& x) override;
  /// The class token's final representation [N, hidden_dim] the heads read.
  Tensor features(const Tensor& x);
  /// A model in eval mode with the weights of `path` (a file or folder, as ResNet's); the
  /// folder's config.json overrides `c`'s sizes, else num_classes is the checkpoint's.
  static std::shared_ptr<VisionTransformer> from_pretrained(const std::string& path,
                                                            ViTConfig c = {});
  Tensor class_token;  // [1, 1, hidden_dim]
  nn::Conv2d conv_proj;
  ViTEncoder encoder;
  nn::ModuleDict heads;  // "head" (after "pre_logits", "act" with a representation size)
  const ViTConfig config;
};

std::shared_ptr<VisionTransformer> vit_b_16(ViTConfig c = {});
/// `c` with the sizes and num_classes that a config.json (`v`) sets.
ViTConfig vit_config(const VisionConfig& v, ViTConfig c = {});

}  // namespace ember::models

// Vision Transformer with torchvision's module names and forward.
#include "ember/models/vit.h"

#include "ember/error.h"
#include "ember/models/checkpoint.h"
#include "ember/models/vision_config.h"
#include "ember/nn/activation.h"
#include "ember/nn/init.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"

namespace ember::models {

namespace {
nn::LayerNormOptions ln_options(const ViTConfig& c) {
  return {.shape = {c.hidden_dim}, .eps = c.norm_eps, .param = c.param};
}
}  // namespace

EncoderBlock::EncoderBlock(const ViTConfig& c)
    : ln_1(ln_options(c)),
      self_attention({.embed_dim = c.hidden_dim,
                      .num_heads = c.num_heads,
                      .dropout = c.attention_dropout,
                      .batch_first = true,
                      .param = c.param}),
      dropout(c.dropout),
      ln_2(ln_options(c)) {
  mlp.push_back(std::make_shared<nn::Linear>(
      nn::LinearOptions{.in = c.hidden_dim, .out = c.mlp_dim, .param = c.param}));
  mlp.push_back(std::make_shared<nn::GELU>());
  mlp.push_back(std::make_shared<nn::Dropout>(c.dropout));
  mlp.push_back(std::make_shared<nn::Linear>(
      nn::LinearOptions{.in = c.mlp_dim, .out = c.hidden_dim, .param = c.param}));
  mlp.push_back(std::make_shared<nn::Dropout>(c.dropout));
  register_modules({{"ln_1", ln_1}, {"self_attention", self_attention}, {"dropout", dropout},
                    {"ln_2", ln_2}, {"mlp", mlp}});
}

Tensor EncoderBlock::forward(const Tensor& input) {
  Tensor x = ln_1(input);
  x = std::get<0>(self_attention(x, x, x, {.need_weights = false}));
  x = dropout(x) + input;
  return x + mlp(ln_2(x));
}

ViTEncoder::ViTEncoder(int64_t seq_length, const ViTConfig& c)
    : pos_embedding(empty({1, seq_length, c.hidden_dim},
                          {.dtype = c.param.dtype, .device = c.param.device})),
      dropout(c.dropout),
      ln(ln_options(c)) {
  nn::init::normal_(pos_embedding, 0.0, 0.02);
  register_parameter("pos_embedding", pos_embedding);
  for (int64_t i = 0; i < c.num_layers; ++i)
    layers.insert("encoder_layer_" + std::to_string(i), std::make_shared<EncoderBlock>(c));
  register_modules({{"dropout", dropout}, {"layers", layers}, {"ln", ln}});
}

Tensor ViTEncoder::forward(const Tensor& input) {
  Tensor x = dropout(input + pos_embedding);
  for (const auto& k : layers.keys()) x = layers[k].forward(x);
  return ln(x);
}

VisionTransformer::VisionTransformer(const ViTConfig& c)
    : class_token(zeros({1, 1, c.hidden_dim}, {.dtype = c.param.dtype, .device = c.param.device})),
      conv_proj({.in = 3,
                 .out = c.hidden_dim,
                 .kernel = c.patch_size,
                 .stride = c.patch_size,
                 .param = c.param}),
      encoder((c.image_size / c.patch_size) * (c.image_size / c.patch_size) + 1, c),
      config(c) {
  if (c.patch_size <= 0 || c.image_size % c.patch_size != 0)
    detail::throw_value("VisionTransformer",
                        "image_size " + std::to_string(c.image_size) +
                            " is not a multiple of patch_size " + std::to_string(c.patch_size));
  if (c.hidden_dim % c.num_heads != 0)
    detail::throw_value("VisionTransformer", "hidden_dim " + std::to_string(c.hidden_dim) +
                                                 " is not a multiple of num_heads " +
                                                 std::to_string(c.num_heads));
  register_parameter("class_token", class_token);
  int64_t head_in = c.hidden_dim;
  if (c.representation_size) {
    heads.insert("pre_logits",
                 std::make_shared<nn::Linear>(nn::LinearOptions{
                     .in = c.hidden_dim, .out = *c.representation_size, .param = c.param}));
    heads.insert("act", std::make_shared<nn::Tanh>());
    head_in = *c.representation_size;
  }
  heads.insert("head", std::make_shared<nn::Linear>(nn::LinearOptions{
                           .in = head_in, .out = c.num_classes, .param = c.param}));
  register_modules({{"conv_proj", conv_proj}, {"encoder", encoder}, {"heads", heads}});
}

Tensor VisionTransformer::features(const Tensor& x) {
  const Shape& s = x.shape();
  if (s.size() != 4 || s[1] != 3 || s[2] != config.image_size || s[3] != config.image_size)
    detail::throw_value("VisionTransformer",
                        "expected images [N, 3, " + std::to_string(config.image_size) + ", " +
                            std::to_string(config.image_size) + "], found " + shape_str(s));
  int64_t n = s[0];
  Tensor p = conv_proj(x).reshape({n, config.hidden_dim, -1}).permute({0, 2, 1});
  Tensor t = cat({class_token.expand({n, 1, config.hidden_dim}), p}, 1);
  return encoder(t).select(1, 0);
}

Tensor VisionTransformer::forward(const Tensor& x) {
  Tensor y = features(x);
  for (const auto& k : heads.keys()) y = heads[k].forward(y);
  return y;
}

std::shared_ptr<VisionTransformer> VisionTransformer::from_pretrained(const std::string& path,
                                                                      ViTConfig c) {
  VisionConfig vc = read_vision_config(path);
  c = vit_config(vc, c);
  if (!vc.num_classes)
    if (int64_t k = head_classes(path, "heads.head.weight")) c.num_classes = k;
  auto m = std::make_shared<VisionTransformer>(c);
  load_checkpoint(*m, path);
  m->eval();
  return m;
}

ViTConfig vit_config(const VisionConfig& v, ViTConfig c) {
  if (v.image_size) c.image_size = *v.image_size;
  if (v.patch_size) c.patch_size = *v.patch_size;
  if (v.num_layers) c.num_layers = *v.num_layers;
  if (v.num_heads) c.num_heads = *v.num_heads;
  if (v.hidden_dim) c.hidden_dim = *v.hidden_dim;
  if (v.mlp_dim) c.mlp_dim = *v.mlp_dim;
  if (v.num_classes) c.num_classes = *v.num_classes;
  return c;
}

std::shared_ptr<VisionTransformer> vit_b_16(ViTConfig c) {
  return std::make_shared<VisionTransformer>(c);
}

}  // namespace ember::models

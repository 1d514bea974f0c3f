// The vision zoo by name: creating a model from a VisionConfig, loading one from a checkpoint.
#include "ember/models/vision.h"

#include "ember/error.h"

namespace ember::models {

namespace {
bool is_resnet(const std::string& a) {
  return a.rfind("resnet", 0) == 0 || a.rfind("resnext", 0) == 0 ||
         a.rfind("wide_resnet", 0) == 0;
}
}  // namespace

std::string vision_head_key(const std::string& a) {
  if (is_resnet(a)) return "fc.weight";
  if (a == "mobilenet_v2" || a == "efficientnet_b0") return "classifier.1.weight";
  if (a.rfind("vit_", 0) == 0) return "heads.head.weight";
  detail::throw_value("vision_model",
                      "unknown architecture '" + a +
                          "' (resnet18, resnet34, resnet50, resnet101, resnet152, "
                          "resnext50_32x4d, wide_resnet50_2, mobilenet_v2, efficientnet_b0, "
                          "vit_b_16, vit_b_32, vit_l_16)");
}

std::shared_ptr<nn::Module> create_vision_model(const VisionConfig& v) {
  const std::string& a = v.architecture;
  vision_head_key(a);  // refuses unknown names
  if (is_resnet(a)) {
    ResNetConfig c = resnet_config(a);
    if (v.num_classes) c.num_classes = *v.num_classes;
    if (v.width) c.width = *v.width;
    return std::make_shared<ResNet>(c);
  }
  if (a == "mobilenet_v2") {
    MobileNetV2Config c;
    if (v.num_classes) c.num_classes = *v.num_classes;
    if (v.width_mult) c.width_mult = *v.width_mult;
    return std::make_shared<MobileNetV2>(c);
  }
  if (a == "efficientnet_b0") {
    EfficientNetConfig c;
    if (v.num_classes) c.num_classes = *v.num_classes;
    if (v.width_mult) c.width_mult = *v.width_mult;
    return std::make_shared<EfficientNet>(c);
  }
  ViTConfig c;  // vit_b_16's sizes
  if (a == "vit_b_32") c.patch_size = 32;
  if (a == "vit_l_16") {
    c.num_layers = 24;
    c.num_heads = 16;
    c.hidden_dim = 1024;
    c.mlp_dim = 4096;
  }
  if (a != "vit_b_16" && a != "vit_b_32" && a != "vit_l_16")
    detail::throw_value("vision_model", "unknown ViT '" + a + "' (vit_b_16, vit_b_32, vit_l_16)");
  c = vit_config(v, c);
  return std::make_shared<VisionTransformer>(c);
}

std::shared_ptr<nn::Module> load_vision_model(const std::string& path,
                                              const std::string& architecture) {
  VisionConfig v = read_vision_config(path);
  if (!architecture.empty()) v.architecture = architecture;
  if (v.architecture.empty())
    detail::throw_value("load_vision_model",
                        path + ": no architecture given and no config.json naming one");
  if (!v.num_classes)
    if (int64_t n = head_classes(path, vision_head_key(v.architecture))) v.num_classes = n;
  auto m = create_vision_model(v);
  load_checkpoint(*m, path);
  m->eval();
  return m;
}

}  // namespace ember::models

#pragma once
// What a vision model folder's config.json says: the architecture and the few numbers that size
// a zoo model. The zoo's factories take their own config structs; this is only their reader.
#include <optional>
#include <string>

namespace ember::models {

struct VisionConfig {
  /// torchvision's name: "resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "vit_b_16".
  std::string architecture;
  std::optional<int64_t> num_classes;  // or the size of "id2label"
  std::optional<int64_t> width;        // ResNet stem width
  std::optional<double> width_mult;    // MobileNetV2 / EfficientNet
  std::optional<int64_t> image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim;
};

/// Reads `path`/config.json when `path` is a folder that has one, or `path` itself when it is a
/// .json file; an empty config otherwise. The architecture comes from "architecture",
/// "model_type" or the first of "architectures". store::FormatError for invalid JSON.
VisionConfig read_vision_config(const std::string& path);

/// dim 0 of the checkpoint's `head_key` tensor (the number of classes its classifier gives),
/// or 0 when the checkpoint has no such tensor.
int64_t head_classes(const std::string& path, const std::string& head_key);

}  // namespace ember::models

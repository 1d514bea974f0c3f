#pragma once
// The vision zoo: ResNet-18/34/50/101, MobileNetV2, EfficientNet-B0 and ViT-B/16 with
// torchvision's module names (state_dict keys equal torchvision's, so its checkpoints load
// unchanged), plus loading any of them by name from a checkpoint file or model folder.
#include <memory>
#include <string>

#include "ember/models/checkpoint.h"
#include "ember/models/efficientnet.h"
#include "ember/models/mobilenet.h"
#include "ember/models/resnet.h"
#include "ember/models/vision_config.h"
#include "ember/models/vit.h"

namespace ember::models {

/// A zoo model with fresh weights, by torchvision's name ("resnet18", ..., "mobilenet_v2",
/// "efficientnet_b0", "vit_b_16"), sized by the config's entries (unset ones keep the
/// defaults). ValueError for an unknown architecture.
std::shared_ptr<nn::Module> create_vision_model(const VisionConfig& config);

/// A zoo model in eval mode with the weights of `path`: a folder whose config.json names the
/// architecture, or a checkpoint file (or folder without config.json) with `architecture` given.
/// num_classes comes from config.json, else from the checkpoint's classifier.
std::shared_ptr<nn::Module> load_vision_model(const std::string& path,
                                              const std::string& architecture = "");

/// The state_dict key of an architecture's classifier weight ("fc.weight", ...).
std::string vision_head_key(const std::string& architecture);

}  // namespace ember::models

// config.json of a vision model folder, and the class count a checkpoint's head gives.
#include "ember/models/vision_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/models/checkpoint.h"
#include "ember/store/safetensors.h"

namespace ember::models {

namespace fs = std::filesystem;

VisionConfig read_vision_config(const std::string& path) {
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(file, ec)) file /= "config.json";
  else if (file.extension() != ".json") return {};
  if (!fs::is_regular_file(file, ec)) return {};
  std::ifstream in(file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw store::FormatError("[read_vision_config] " + file.string() + ": not valid JSON (" +
                             e.what() + ")");
  }
  if (!j.is_object())
    throw store::FormatError("[read_vision_config] " + file.string() + ": expected an object");
  VisionConfig c;
  auto str = [&](const char* k) -> std::string {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  auto integer = [&](const char* k) -> std::optional<int64_t> {
    if (!j.contains(k)) return std::nullopt;
    if (!j[k].is_number_integer())
      throw store::FormatError("[read_vision_config] " + file.string() + ": \"" + k +
                               "\" must be an integer");
    return j[k].get<int64_t>();
  };
  c.architecture = str("architecture");
  if (c.architecture.empty()) c.architecture = str("model_type");
  if (c.architecture.empty() && j.contains("architectures") && j["architectures"].is_array() &&
      !j["architectures"].empty() && j["architectures"][0].is_string())
    c.architecture = j["architectures"][0].get<std::string>();
  c.num_classes = integer("num_classes");
  if (!c.num_classes && j.contains("id2label") && j["id2label"].is_object())
    c.num_classes = int64_t(j["id2label"].size());
  c.width = integer("width");
  if (j.contains("width_mult")) {
    if (!j["width_mult"].is_number())
      throw store::FormatError("[read_vision_config] " + file.string() +
                               ": \"width_mult\" must be a number");
    c.width_mult = j["width_mult"].get<double>();
  }
  c.image_size = integer("image_size");
  c.patch_size = integer("patch_size");
  c.num_layers = integer("num_layers");
  c.num_heads = integer("num_heads");
  c.hidden_dim = integer("hidden_dim");
  c.mlp_dim = integer("mlp_dim");
  return c;
}

int64_t head_classes(const std::string& path, const std::string& head_key) {
  auto s = checkpoint_tensor_shape(path, head_key);
  return s && !s->empty() ? (*s)[0] : 0;
}

}  // namespace ember::models

// Checkpoint files and folders: which files hold the weights, and loading them by key.
#include "ember/models/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "ember/store/pytorch.h"

namespace ember::models {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail_io(const std::string& path, const std::string& what) {
  throw store::IOError("[load_checkpoint] " + path + ": " + what);
}

// The shard files an HF index names (its "weight_map" values), in first-use order.
std::vector<std::string> shards_of(const fs::path& index) {
  std::ifstream in(index);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw store::FormatError("[load_checkpoint] " + index.string() + ": not valid JSON (" +
                             e.what() + ")");
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw store::FormatError("[load_checkpoint] " + index.string() +
                             ": expected an object with a \"weight_map\" object");
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (auto& [key, file] : j["weight_map"].items()) {
    if (!file.is_string())
      throw store::FormatError("[load_checkpoint] " + index.string() + ": weight_map[\"" + key +
                               "\"] is not a file name");
    std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "..")  // beside their index
      throw store::FormatError("[load_checkpoint] " + index.string() + ": shard name '" + f +
                               "' is not a plain file name");
    if (seen.insert(f).second) files.push_back((index.parent_path() / f).string());
  }
  if (files.empty())
    throw store::FormatError("[load_checkpoint] " + index.string() + ": empty weight_map");
  return files;
}

}  // namespace

std::vector<std::string> checkpoint_files(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return {path};
  if (!fs::is_directory(path, ec)) fail_io(path, "no such file or folder");
  fs::path dir(path);
  for (const char* index : {"model.safetensors.index.json", "pytorch_model.bin.index.json"})
    if (fs::is_regular_file(dir / index, ec)) return shards_of(dir / index);
  for (const char* single : {"model.safetensors", "pytorch_model.bin"})
    if (fs::is_regular_file(dir / single, ec)) return {(dir / single).string()};
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string ext = e.path().extension().string();
    if (e.is_regular_file() &&
        (ext == ".safetensors" || ext == ".pt" || ext == ".pth" || ext == ".bin"))
      found.push_back(e.path().string());
  }
  if (found.size() == 1) return found;
  fail_io(path, found.empty()
                    ? "no weights found (model.safetensors, model.safetensors.index.json, "
                      "pytorch_model.bin or one *.safetensors / *.pt file)"
                    : std::to_string(found.size()) +
                          " weight files and no index file to say which to load");
}

store::LoadReport load_checkpoint(nn::Module& model, const std::string& path,
                                  const store::LoadOptions& options) {
  // The shards are one source: every key of every shard is checked before anything is written.
  return store::load_into(model.state_dict(), checkpoint_files(path), options);
}

std::optional<Shape> checkpoint_tensor_shape(const std::string& path, const std::string& key) {
  for (const auto& f : checkpoint_files(path)) {
    if (store::is_pytorch_file(f)) {
      if (auto v = store::load_pytorch(f).model_state().find(key); v && v->is_tensor())
        return v->tensor_shape();
    } else {
      store::SafetensorsFile sf(f);
      if (sf.contains(key)) return sf.info(key).shape;
    }
  }
  return std::nullopt;
}

}  // namespace ember::models

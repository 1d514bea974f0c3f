// Checkpoint files and folders: which files hold the weights, and loading them by key.
#include "ember/models/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

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

// Whether `name` passes the options' include / exclude filters (names filtered out are neither
// loaded nor missing, as in store::load_into).
bool wanted(const std::string& name, const store::LoadOptions& o) {
  auto any = [&](const std::vector<std::string>& res) {
    return std::any_of(res.begin(), res.end(),
                       [&](const std::string& re) { return std::regex_search(name, std::regex(re)); });
  };
  return (o.include.empty() || any(o.include)) && !any(o.exclude);
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
  std::vector<std::string> files = checkpoint_files(path);
  nn::StateDict targets = model.state_dict();
  if (files.size() == 1) return store::load_into(targets, files[0], options);
  // Shards: each holds part of the targets; what none of them held is missing.
  store::LoadOptions each = options;
  each.allow_partial = true;
  store::LoadReport total;
  std::set<std::string> loaded;
  for (const auto& f : files) {
    store::LoadReport r = store::load_into(targets, f, each);
    loaded.insert(r.loaded.begin(), r.loaded.end());
    total.loaded.insert(total.loaded.end(), r.loaded.begin(), r.loaded.end());
    total.unexpected.insert(total.unexpected.end(), r.unexpected.begin(), r.unexpected.end());
  }
  for (const auto& [name, t] : targets)
    if (!loaded.count(name) && wanted(name, options)) total.missing.push_back(name);
  if (!total.missing.empty() && !options.allow_partial) {
    std::ostringstream msg;
    msg << "[load_checkpoint] " << path << ": missing (a target, in no shard):";
    for (size_t i = 0; i < total.missing.size(); ++i)
      msg << (i ? ", " : " ") << total.missing[i];
    throw store::LoadError(msg.str(), total, {});
  }
  return total;
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

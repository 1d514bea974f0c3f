// Reading the weights of a Hugging Face-style folder, whichever of its three layouts it uses.
#include "ember/models/hf_folder.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ember/store/pytorch.h"
#include "ember/store/safetensors.h"

namespace ember::models {
namespace fs = std::filesystem;

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw store::IOError("[models] cannot open " + path);
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) throw store::IOError("[models] cannot read " + path);
  return s.str();
}

namespace {

void append(nn::StateDict& out, store::TensorMap&& more) {
  for (auto& kv : more) out.push_back(std::move(kv));
}

// The shard files named by an index's weight_map, each once, in the order first named.
std::vector<std::string> shard_files(const std::string& index_path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(index_path));
  } catch (const nlohmann::json::exception& e) {
    throw store::FormatError("[models] " + index_path + ": not JSON (" + e.what() + ")");
  }
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    throw store::FormatError("[models] " + index_path + ": expected a \"weight_map\" object");
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const auto& [key, file] : j["weight_map"].items()) {
    if (!file.is_string())
      throw store::FormatError("[models] " + index_path + ": the file of " + key +
                               " is not a string");
    std::string name = file.get<std::string>();
    // A shard is a file beside the index, never a path elsewhere.
    if (name.empty() || name.find('/') != std::string::npos || name == "..")
      throw store::FormatError("[models] " + index_path + ": bad shard name \"" + name + "\"");
    if (seen.insert(name).second) files.push_back(name);
  }
  return files;
}

}  // namespace

nn::StateDict read_hf_weights(const std::string& dir) {
  nn::StateDict out;
  fs::path d(dir);
  if (fs::exists(d / "model.safetensors.index.json")) {
    for (const auto& f : shard_files((d / "model.safetensors.index.json").string()))
      append(out, store::load_safetensors((d / f).string()));
  } else if (fs::exists(d / "model.safetensors")) {
    append(out, store::load_safetensors((d / "model.safetensors").string()));
  } else if (fs::exists(d / "pytorch_model.bin.index.json")) {
    for (const auto& f : shard_files((d / "pytorch_model.bin.index.json").string()))
      append(out, store::load_pytorch((d / f).string()).model_state().state_dict());
  } else if (fs::exists(d / "pytorch_model.bin")) {
    append(out, store::load_pytorch((d / "pytorch_model.bin").string()).model_state().state_dict());
  } else {
    throw store::IOError("[models] " + dir +
                         ": expected model.safetensors, model.safetensors.index.json or "
                         "pytorch_model.bin, found none");
  }
  return out;
}

void load_hf_weights(nn::Module& model, const std::string& dir, const KeyMap& map) {
  nn::StateDict sd;
  for (auto& [key, t] : read_hf_weights(dir)) {
    std::optional<std::string> name = map ? map(key) : std::optional<std::string>(key);
    if (name) sd.emplace_back(std::move(*name), std::move(t));
  }
  model.load_state_dict(sd, /*strict=*/true);
}

}  // namespace ember::models

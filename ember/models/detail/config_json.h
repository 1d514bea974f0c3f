#pragma once
// Reading config.json fields into config structs (private: nlohmann-json stays out of the public
// headers).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ember/models/hf_folder.h"
#include "ember/ops/unary.h"
#include "ember/store/safetensors.h"

namespace ember::models::cfg {

using json = nlohmann::json;

/// Parses a config's text; store::FormatError names `what` when it is not a JSON object.
inline json parse_config(const std::string& text, const std::string& what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw store::FormatError("[models] " + what + ": not JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw store::FormatError("[models] " + what + ": expected a JSON object");
  return j;
}

/// Sets `out` from j[key] when present and not null; a value of the wrong type is a FormatError.
template <class T>
void read(const json& j, const char* key, T& out, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  try {
    out = it->get<T>();
  } catch (const json::exception& e) {
    throw store::FormatError("[models] " + what + ": field \"" + key + "\" has the wrong type (" +
                             e.what() + ")");
  }
}
template <class T>
void read(const json& j, const char* key, std::optional<T>& out, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  T v{};
  read(j, key, v, what);
  out = v;
}

/// A token id or a list of them (eos_token_id is either), appended to `out`.
inline void read_ids(const json& j, const char* key, std::vector<int64_t>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (it->is_number_integer()) out.push_back(it->get<int64_t>());
  if (it->is_array())
    for (const auto& v : *it)
      if (v.is_number_integer()) out.push_back(v.get<int64_t>());
}

/// Checks an activation name of HF's ACT2FN that ember has (gelu, gelu_new, gelu_pytorch_tanh,
/// relu, silu); store::FormatError naming `field` otherwise.
inline void check_activation(const std::string& name, const char* field, const std::string& what) {
  if (name != "gelu" && name != "gelu_new" && name != "gelu_pytorch_tanh" && name != "relu" &&
      name != "silu")
    throw store::FormatError("[models] " + what + ": " + field + " \"" + name +
                             "\" is not one of gelu, gelu_new, gelu_pytorch_tanh, relu, silu");
}
/// The activation `name` (checked by check_activation) applied to x.
inline Tensor activation(const std::string& name, const Tensor& x) {
  if (name == "gelu") return gelu(x);
  if (name == "relu") return relu(x);
  if (name == "silu") return silu(x);
  return gelu(x, "tanh");  // gelu_new and gelu_pytorch_tanh are the tanh approximation
}

}  // namespace ember::models::cfg

#pragma once
// Hugging Face-style model folders: config.json beside the weights, which are one
// model.safetensors, several shards named by model.safetensors.index.json, or pytorch_model.bin
// (torch.save's format, read by ember's restricted unpickler).
#include <functional>
#include <optional>
#include <string>

#include "ember/nn/module.h"

namespace ember::models {

/// Maps a checkpoint key to the module's key; nullopt drops the tensor (buffers the module
/// recomputes, heads it does not have). The type of store::LoadOptions::map_key.
using KeyMap = std::function<std::optional<std::string>(const std::string&)>;

/// The folder's tensors with their file keys, from the weights files checkpoint_files() names
/// for it (an index's shards, else model.safetensors or pytorch_model.bin), as views of the
/// mapped files (see store::ReadOptions). Throws store::IOError when the folder has no weights
/// file.
nn::StateDict read_hf_weights(const std::string& dir);

/// load_checkpoint(model, dir, {.map_key = map}): the folder's weights, renamed with `map`, go
/// into `model` strictly; missing, unexpected and mis-shaped keys of every shard are reported
/// together in one store::LoadError, and an error leaves `model` unchanged.
void load_hf_weights(nn::Module& model, const std::string& dir, const KeyMap& map);

/// The whole text of `path`; store::IOError when it cannot be read.
std::string read_text_file(const std::string& path);

}  // namespace ember::models

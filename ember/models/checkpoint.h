#pragma once
// Loading a checkpoint into a model: a single file (.pt/.pth/.bin from torch.save, or
// .safetensors) or a Hugging Face-style folder (model.safetensors, sharded safetensors with
// model.safetensors.index.json, pytorch_model.bin, or its sharded index).
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/module.h"
#include "ember/store/load.h"

namespace ember::models {

/// The weight files `path` stands for: itself when it is a file; for a folder, the shards its
/// index file names (model.safetensors.index.json or pytorch_model.bin.index.json), else
/// model.safetensors, pytorch_model.bin, or its one *.safetensors / *.pt / *.pth / *.bin file.
/// store::IOError when the path does not exist or the folder holds none of these.
std::vector<std::string> checkpoint_files(const std::string& path);

/// Loads the checkpoint at `path` into `model`'s state_dict (parameters and buffers, keys as
/// the model names them) through store::load_into. A sharded folder's shards are taken as one
/// file: missing, unexpected and mis-shaped keys of all of them are one store::LoadError, and
/// any error (a damaged shard, a key in two shards) leaves the model unchanged.
store::LoadReport load_checkpoint(nn::Module& model, const std::string& path,
                                  const store::LoadOptions& options = {});

/// The shape of tensor `key` in the checkpoint at `path`, without reading its data (nullopt when
/// absent).
std::optional<Shape> checkpoint_tensor_shape(const std::string& path, const std::string& key);

}  // namespace ember::models

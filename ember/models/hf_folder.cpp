// Reading the weights of a Hugging Face-style folder, whichever of its three layouts it uses.
#include "ember/models/hf_folder.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/models/checkpoint.h"
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

}  // namespace

nn::StateDict read_hf_weights(const std::string& dir) {
  nn::StateDict out;
  for (const std::string& f : checkpoint_files(dir)) {
    if (fs::path(f).extension() == ".safetensors")
      append(out, store::load_safetensors(f));
    else
      append(out, store::load_pytorch(f).model_state().state_dict());
  }
  return out;
}

void load_hf_weights(nn::Module& model, const std::string& dir, const KeyMap& map) {
  load_checkpoint(model, dir, {.map_key = map});
}

}  // namespace ember::models

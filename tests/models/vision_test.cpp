// The vision zoo against torchvision (tests/gen/gen_vision_models.py): every full-size model's
// state_dict keys, shapes and dtypes equal torchvision's; small variants built from torchvision's
// own classes load unchanged from .pt (zip and legacy) and safetensors and give torch's logits;
// HF-style folders (single, sharded, pytorch_model.bin) load; damaged files give clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/models/vision.h"
#include "ember/store/pytorch.h"

using namespace ember;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(EMBER_TEST_DATA) + "/models/";

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

// A fresh folder under the system temp dir, removed with the object.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("ember_models_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

models::VisionConfig config_of(const std::string& name) {
  return models::read_vision_config(kDir + name + ".json");
}

// Runs `m` on the fixture's input and compares with torch's output.
void expect_matches_torch(nn::Module& m, const std::string& name) {
  m.eval();
  store::PtValue io = store::load_pytorch(kDir + name + "_io.pt");
  Tensor x = io.at("input").tensor(), want = io.at("output").tensor();
  NoGradGuard ng;
  Tensor y = m(x);
  ASSERT_EQ(y.shape(), want.shape());
  float err = max(abs(y - want)).item<float>();
  EXPECT_LT(err, 1e-4) << name;
}

std::vector<std::string> small_models() {
  return {"resnet18_small", "resnet50_small", "mobilenet_v2_small", "efficientnet_b0_small",
          "vit_small"};
}

}  // namespace

TEST(VisionZoo, KeysEqualTorchvisionForEveryFullModel) {
  json keys = read_json(kDir + "keys.json");
  for (const auto& [arch, want] : keys.items()) {
    SCOPED_TRACE(arch);
    auto m = models::create_vision_model({.architecture = arch});
    nn::StateDict sd = m->state_dict();
    ASSERT_EQ(sd.size(), want.size());
    for (size_t i = 0; i < sd.size(); ++i) {
      EXPECT_EQ(sd[i].first, want[i][0].get<std::string>()) << i;
      EXPECT_EQ(sd[i].second.shape(), Shape(want[i][1].get<std::vector<int64_t>>()))
          << sd[i].first;
      EXPECT_EQ(std::string(dtype_name(sd[i].second.dtype())), want[i][2].get<std::string>())
          << sd[i].first;
    }
  }
}

TEST(VisionZoo, FactoriesMatchTheirNames) {
  EXPECT_EQ(models::resnet34()->state_dict().size(), read_json(kDir + "keys.json")["resnet34"].size());
  auto r = models::resnet50({.num_classes = 7});
  EXPECT_EQ(r->fc.weight.shape(), Shape({7, 2048}));
  EXPECT_EQ(models::resnet101()->layer3.size(), 23u);
  EXPECT_EQ(models::mobilenet_v2({.num_classes = 3})->last_channel, 1280);
  EXPECT_EQ(models::vit_b_16({.num_classes = 5})->encoder.pos_embedding.shape(),
            Shape({1, 197, 768}));
  EXPECT_THROW(models::create_vision_model({.architecture = "alexnet"}), ValueError);
}

TEST(VisionZoo, SmallModelsMatchTorchFromPt) {
  for (const auto& name : small_models()) {
    SCOPED_TRACE(name);
    auto m = models::create_vision_model(config_of(name));
    store::LoadReport r = models::load_checkpoint(*m, kDir + name + ".pt");
    EXPECT_EQ(r.loaded.size(), m->state_dict().size());
    expect_matches_torch(*m, name);
  }
}

TEST(VisionZoo, SmallModelsMatchTorchFromSafetensorsAndLegacyPt) {
  for (const std::string name : {"resnet18_small", "mobilenet_v2_small", "vit_small"}) {
    SCOPED_TRACE(name);
    auto m = models::create_vision_model(config_of(name));
    store::load_into(m->state_dict(), kDir + name + ".safetensors");
    expect_matches_torch(*m, name);
  }
  auto m = models::create_vision_model(config_of("resnet18_small"));
  models::load_checkpoint(*m, kDir + "resnet18_small_legacy.pt");
  expect_matches_torch(*m, "resnet18_small");
  // The batch-norm buffers came from the file too.
  auto& r = dynamic_cast<models::ResNet&>(*m);
  EXPECT_EQ(r.bn1.num_batches_tracked.item<int64_t>(), 3);
}

TEST(VisionZoo, FromPretrainedFileTakesNumClassesFromTheCheckpoint) {
  auto r = models::ResNet::from_pretrained(kDir + "resnet50_small.pt",
                                           models::resnet_config("resnet50", {.width = 8}));
  EXPECT_EQ(r->config.num_classes, 10);
  EXPECT_FALSE(r->is_training());
  expect_matches_torch(*r, "resnet50_small");
  auto v = models::VisionTransformer::from_pretrained(
      kDir + "vit_small.safetensors",
      {.image_size = 32, .patch_size = 8, .num_layers = 2, .num_heads = 4, .hidden_dim = 32,
       .mlp_dim = 64});
  expect_matches_torch(*v, "vit_small");
  // width_mult is not in a bare file: the default width does not fit, and the store says so.
  EXPECT_THROW(models::load_vision_model(kDir + "efficientnet_b0_small.pt", "efficientnet_b0"),
               store::LoadError);
}

TEST(VisionZoo, FromPretrainedFolders) {
  const std::string name = "mobilenet_v2_small";
  json config = read_json(kDir + name + ".json");
  // config.json + model.safetensors
  TempDir single("single");
  std::ofstream(single / "config.json") << config.dump();
  fs::copy_file(kDir + name + ".safetensors", single / "model.safetensors");
  auto a = models::MobileNetV2::from_pretrained(single.path.string());
  EXPECT_EQ(a->config.width_mult, 0.25);
  expect_matches_torch(*a, name);
  // Sharded: two safetensors files and model.safetensors.index.json.
  TempDir sharded("sharded");
  std::ofstream(sharded / "config.json") << config.dump();
  store::TensorMap all = store::load_safetensors(kDir + name + ".safetensors");
  store::TensorMap first(all.begin(), all.begin() + all.size() / 2),
      second(all.begin() + all.size() / 2, all.end());
  store::save_safetensors(sharded / "model-00001-of-00002.safetensors", first);
  store::save_safetensors(sharded / "model-00002-of-00002.safetensors", second);
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
  for (auto& [k, t] : first) index["weight_map"][k] = "model-00001-of-00002.safetensors";
  for (auto& [k, t] : second) index["weight_map"][k] = "model-00002-of-00002.safetensors";
  std::ofstream(sharded / "model.safetensors.index.json") << index.dump();
  auto b = models::load_vision_model(sharded.path.string());
  expect_matches_torch(*b, name);
  // A shard that lost its keys: the missing ones are named.
  store::save_safetensors(sharded / "model-00002-of-00002.safetensors", {second[0]});
  auto c = models::create_vision_model(config_of(name));
  try {
    models::load_checkpoint(*c, sharded.path.string());
    ADD_FAILURE() << "expected a LoadError";
  } catch (const store::LoadError& e) {
    EXPECT_NE(std::string(e.what()).find(second[1].first), std::string::npos) << e.what();
    EXPECT_EQ(e.report.missing.size(), second.size() - 1);
  }
  // A damaged or mis-shaped last shard: the load fails and the model is left as it was (the
  // first shard's tensors are not written either).
  auto unchanged = [&](const nn::Module& m, const store::TensorMap& before) {
    store::TensorMap now = m.state_dict();
    for (size_t i = 0; i < now.size(); ++i)
      if (!equal(now[i].second, before[i].second)) return false;
    return true;
  };
  // The shard loaded last (the order of the index's keys) is the damaged one.
  store::save_safetensors(sharded / "model-00002-of-00002.safetensors", second);
  const std::string last = models::checkpoint_files(sharded.path.string()).back();
  const store::TensorMap last_tensors = store::load_safetensors(last);
  std::string last_bytes;
  {
    std::ifstream in(last, std::ios::binary);
    last_bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(last, std::ios::binary) << last_bytes.substr(0, last_bytes.size() - 10);
  auto fresh = models::create_vision_model(config_of(name));  // values unlike the checkpoint's
  store::TensorMap before;
  for (auto& [k, t] : fresh->state_dict()) before.emplace_back(k, t.clone());
  EXPECT_THROW(models::load_checkpoint(*fresh, sharded.path.string()), store::TruncatedError);
  EXPECT_TRUE(unchanged(*fresh, before));
  store::TensorMap bad_shape = last_tensors;
  bad_shape.back().second = zeros({3});
  store::save_safetensors(last, bad_shape);
  EXPECT_THROW(models::load_checkpoint(*fresh, sharded.path.string()), store::LoadError);
  EXPECT_TRUE(unchanged(*fresh, before));
  // pytorch_model.bin
  TempDir bin("bin");
  std::ofstream(bin / "config.json") << read_json(kDir + "resnet18_small.json").dump();
  fs::copy_file(kDir + "resnet18_small.pt", bin / "pytorch_model.bin");
  auto d = models::ResNet::from_pretrained(bin.path.string());
  EXPECT_EQ(d->config.width, 8);
  expect_matches_torch(*d, "resnet18_small");
  // An empty folder says what it looked for.
  TempDir empty("empty");
  try {
    models::checkpoint_files(empty.path.string());
    ADD_FAILURE() << "expected an IOError";
  } catch (const store::IOError& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
  }
}

TEST(VisionZoo, DamagedCheckpointsGiveTheStoresErrors) {
  TempDir dir("damaged");
  auto bytes_of = [](const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  auto write = [](const std::string& p, const std::string& b) {
    std::ofstream(p, std::ios::binary) << b;
  };
  auto m = models::create_vision_model(config_of("resnet18_small"));
  Tensor before = dynamic_cast<models::ResNet&>(*m).fc.weight.detach().clone();
  std::string pt = bytes_of(kDir + "resnet18_small.pt");
  std::string st = bytes_of(kDir + "resnet18_small.safetensors");
  write(dir / "cut.pt", pt.substr(0, pt.size() / 2));
  write(dir / "cut.safetensors", st.substr(0, st.size() / 2));
  std::string flipped = pt;
  for (size_t i = 0; i < 64; ++i) flipped[flipped.size() - 200 + i] ^= 0x5a;  // the zip directory
  write(dir / "corrupt.pt", flipped);
  write(dir / "legacy_cut.pt", bytes_of(kDir + "resnet18_small_legacy.pt").substr(0, 100000));
  for (const std::string f : {"cut.pt", "cut.safetensors", "corrupt.pt", "legacy_cut.pt"}) {
    SCOPED_TRACE(f);
    try {
      models::load_checkpoint(*m, dir / f);
      ADD_FAILURE() << "expected a store error";
    } catch (const store::FormatError& e) {  // TruncatedError is a FormatError
      std::string msg = e.what();
      EXPECT_NE(msg.find(f), std::string::npos) << msg;
      EXPECT_EQ(msg[0], '[') << msg;
    }
  }
  // Nothing was written into the model.
  EXPECT_TRUE(equal(dynamic_cast<models::ResNet&>(*m).fc.weight.detach(), before));
}

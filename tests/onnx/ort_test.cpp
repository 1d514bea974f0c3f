// onnxruntime gives the same outputs as ember's runtime graph: the small real models of
// tests/data/onnx_models (tests/gen/gen_onnx_models.py) run in onnxruntime-node (npm, CPU
// execution provider, bench/peers/node/onnxruntime_peer.js `run`) and in onnx::Model::run on
// the same inputs; every output agrees within 1e-5 (abs) + 1e-5 (rel). Skips only when node is
// not installed; with node but without onnxruntime-node (scripts/node-deps.sh) it fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "ember/ember.h"
#include "ember/onnx.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

const fs::path kNodeDir = fs::path(EMBER_SOURCE_DIR) / "bench" / "peers" / "node";

// node from $EMBER_NODE, else the PATH; empty when there is none.
std::string find_node() {
  if (const char* e = std::getenv("EMBER_NODE"); e && *e) return e;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && access((fs::path(d) / "node").c_str(), X_OK) == 0) return (fs::path(d) / "node");
  return {};
}

nlohmann::json to_json(const Tensor& t) {
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  return {{"dims", dims}, {"data", t.to_vector<float>()}};
}

// Runs `model` in onnxruntime on `inputs` (name -> tensor) and returns its outputs by name.
std::map<std::string, std::pair<std::vector<int64_t>, std::vector<double>>> run_ort(
    const std::string& node, const fs::path& model, const std::map<std::string, Tensor>& inputs,
    const fs::path& work) {
  nlohmann::json in = nlohmann::json::object();
  for (const auto& [name, t] : inputs) in[name] = to_json(t);
  fs::path in_path = work / "in.json", out_path = work / "out.json", log = work / "log.txt";
  std::ofstream(in_path) << in.dump();
  std::string cmd = "'" + node + "' '" + (kNodeDir / "onnxruntime_peer.js").string() + "' run '" +
                    model.string() + "' '" + in_path.string() + "' '" + out_path.string() +
                    "' > '" + log.string() + "' 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream logf(log);
  std::string printed((std::istreambuf_iterator<char>(logf)), {});
  EXPECT_EQ(rc, 0) << cmd << "\n" << printed;
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<double>>> out;
  if (rc != 0) return out;
  auto j = nlohmann::json::parse(std::ifstream(out_path));
  for (const auto& [name, v] : j.items())
    out[name] = {v.at("dims").get<std::vector<int64_t>>(), v.at("data").get<std::vector<double>>()};
  return out;
}

}  // namespace

TEST(OnnxRuntimePeer, SameOutputsAsEmber) {
  std::string node = find_node();
  if (node.empty()) GTEST_SKIP() << "node is not installed (scripts/node-deps.sh installs it)";
  ASSERT_TRUE(fs::is_directory(kNodeDir / "node_modules" / "onnxruntime-node"))
      << "onnxruntime-node is not installed in " << kNodeDir << ": run scripts/node-deps.sh";
  fs::path work = fs::temp_directory_path() / ("ember_ort_test_" + std::to_string(getpid()));
  fs::create_directories(work);
  const fs::path root = fs::path(EMBER_TEST_DATA) / "onnx_models";
  for (const char* name : {"tiny_cnn_op13", "tiny_cnn_op17", "transformer_encoder_op17"}) {
    SCOPED_TRACE(name);
    fs::path model = root / name / "model.onnx";
    onnx::Model m = onnx::load(model.string());
    // Batch 2 (test_data_set_1): the models' batch dim is dynamic.
    Tensor x = onnx::load_tensor((root / name / "test_data_set_1" / "input_0.pb").string());
    std::map<std::string, Tensor> inputs{{m.inputs().at(0).name, x}};
    auto want = run_ort(node, model, inputs, work);
    auto got = m.run(inputs);
    ASSERT_EQ(want.size(), got.size());
    for (const auto& [out, w] : want) {
      ASSERT_TRUE(got.count(out)) << out;
      const Tensor& g = got.at(out);
      ASSERT_EQ(std::vector<int64_t>(g.shape().begin(), g.shape().end()), w.first) << out;
      auto gv = g.to_vector<double>();
      ASSERT_EQ(gv.size(), w.second.size()) << out;
      double worst = 0;
      for (size_t i = 0; i < gv.size(); ++i)
        worst = std::max(worst, std::abs(gv[i] - w.second[i]) - (1e-5 + 1e-5 * std::abs(w.second[i])));
      EXPECT_LE(worst, 0.0) << out << ": onnxruntime and ember differ beyond 1e-5 + 1e-5 rel";
    }
  }
  fs::remove_all(work);
}

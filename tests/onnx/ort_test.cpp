// onnxruntime gives the same outputs as ember's runtime graph: the small real models of
// tests/data/onnx_models (tests/gen/gen_onnx_models.py) run in onnxruntime-node (npm, CPU
// execution provider, bench/peers/node/onnxruntime_peer.js `run`) and in onnx::Model::run on
// the same inputs; every output agrees within 1e-5 (abs) + 1e-5 (rel). Skips only when node is
// not installed; with node but without onnxruntime-node (scripts/node-deps.sh) it fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "ember/ember.h"
#include "ember/onnx.h"
#include "onnx/ort_harness.h"

namespace fs = std::filesystem;
using namespace ember;
using ember::test::find_node;
using ember::test::kNodeDir;
using ember::test::run_ort;

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
      EXPECT_LE(ember::test::excess(g, w.second, 1e-5, 1e-5), 0.0)
          << out << ": onnxruntime and ember differ beyond 1e-5 + 1e-5 rel";
    }
  }
  fs::remove_all(work);
}

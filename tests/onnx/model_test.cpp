// Small real models exported by torch.onnx (tests/gen/gen_onnx_models.py: a CNN, a 2-layer
// TransformerEncoder, an LSTM and a 2-layer bidirectional GRU at opsets 13 and 17): ember's
// outputs match torch's within 1e-4 abs + 1e-3 rel at batch 1 and 2, from one loaded model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ember/backends/cpu/dnnl_ops.h"
#include "ember/ember.h"
#include "ember/onnx.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

std::vector<fs::path> files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(OnnxModels, MatchTorch) {
  const fs::path root = fs::path(EMBER_TEST_DATA) / "onnx_models";
  auto models = files(root, "");
  ASSERT_EQ(models.size(), 8u) << "run tests/gen/gen_onnx_models.py";
  for (const auto& dir : models) {
    SCOPED_TRACE(dir.filename().string());
    onnx::Model m = onnx::load((dir / "model.onnx").string());
    for (const auto& set : files(dir, "test_data_set_")) {
      TensorList ins, want;
      for (const auto& f : files(set, "input_")) ins.push_back(onnx::load_tensor(f.string()));
      for (const auto& f : files(set, "output_")) want.push_back(onnx::load_tensor(f.string()));
      TensorList got = m.run(ins);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < want.size(); ++k) {
        ASSERT_EQ(got[k].shape(), want[k].shape()) << set.filename() << " output " << k;
        auto g = got[k].to_vector<double>(), w = want[k].to_vector<double>();
        double worst = 0;
        for (size_t i = 0; i < w.size(); ++i)
          worst = std::max(worst, std::abs(g[i] - w[i]) - (1e-4 + 1e-3 * std::abs(w[i])));
        EXPECT_LE(worst, 0.0) << set.filename() << " output " << k;
      }
    }
  }
}

// On cpu the weights are copied from flex's memory once per model, not per run, and the convs
// keep them in oneDNN's layout between runs (they are frozen: dnnl_weights.cpp).
TEST(OnnxModels, RepeatedRunsOnCpuReuseTheWeights) {
  const fs::path dir = fs::path(EMBER_TEST_DATA) / "onnx_models" / "tiny_cnn_op17";
  onnx::Model m = onnx::load((dir / "model.onnx").string());
  const fs::path set = dir / "test_data_set_0";
  const Tensor x = onnx::load_tensor((set / "input_0.pb").string()).to(Device::cpu());
  const Tensor want = onnx::load_tensor((set / "output_0.pb").string());
  cpu::WeightCacheStats last;
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    const Tensor got = m.run(TensorList{x})[0];
    EXPECT_TRUE(allclose(got.to(Device::flex()), want, 1e-3, 1e-4));
    const cpu::WeightCacheStats s = cpu::dnnl_weight_cache_stats();
    if (run > 0 && cpu::dnnl_available()) {
      EXPECT_EQ(s.misses, last.misses);
      EXPECT_GT(s.hits, last.hits);
    }
    last = s;
  }
}

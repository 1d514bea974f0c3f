// The C++ that ember-onnx generated at build time from the real models of
// tests/gen/gen_onnx_models.py (tests/CMakeLists.txt runs the tool): each module, its weights
// loaded by store::load_into, gives the runtime graph's and torch's outputs within
// 1e-4 abs + 1e-3 rel at batch 1 and 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "bigru_op13.h"
#include "bigru_op17.h"
#include "ember/ember.h"
#include "ember/onnx.h"
#include "ember/store/load.h"
#include "lstm_op13.h"
#include "lstm_op17.h"
#include "tiny_cnn_op13.h"
#include "tiny_cnn_op17.h"
#include "transformer_encoder_op13.h"
#include "transformer_encoder_op17.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

double worst_excess(const Tensor& got, const Tensor& want) {
  auto g = got.to_vector<double>(), w = want.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < w.size(); ++i)
    worst = std::max(worst, std::abs(g[i] - w[i]) - (1e-4 + 1e-3 * std::abs(w[i])));
  return worst;
}

TensorList outputs_of(nn::Module& m, const Tensor& x) {
  if (auto* multi = dynamic_cast<onnx_gen::lstm_op13*>(&m)) return multi->forward_all(x);
  if (auto* multi = dynamic_cast<onnx_gen::lstm_op17*>(&m)) return multi->forward_all(x);
  if (auto* multi = dynamic_cast<onnx_gen::bigru_op13*>(&m)) return multi->forward_all(x);
  if (auto* multi = dynamic_cast<onnx_gen::bigru_op17*>(&m)) return multi->forward_all(x);
  return {m.forward(x)};
}

template <class M>
void check(const std::string& name) {
  SCOPED_TRACE(name);
  const fs::path dir = fs::path(EMBER_TEST_DATA) / "onnx_models" / name;
  M module;
  module.eval();
  auto report = store::load_into(module.state_dict(),
                                 (fs::path(EMBER_ONNX_GEN_DIR) / (name + ".safetensors")).string());
  EXPECT_FALSE(report.loaded.empty());
  onnx::Model runtime = onnx::load((dir / "model.onnx").string());
  for (int set = 0; set < 2; ++set) {
    const fs::path d = dir / ("test_data_set_" + std::to_string(set));
    Tensor x = onnx::load_tensor((d / "input_0.pb").string());
    TensorList got = outputs_of(module, x);
    TensorList graph = runtime.run({x});
    ASSERT_EQ(got.size(), graph.size());
    for (size_t k = 0; k < got.size(); ++k) {
      Tensor want = onnx::load_tensor((d / ("output_" + std::to_string(k) + ".pb")).string());
      ASSERT_EQ(got[k].shape(), want.shape()) << "set " << set << " output " << k;
      EXPECT_LE(worst_excess(got[k], want), 0.0) << "torch, set " << set << " output " << k;
      EXPECT_LE(worst_excess(got[k], graph[k]), 0.0) << "graph, set " << set << " output " << k;
    }
  }
}

}  // namespace

TEST(OnnxGenerated, MatchesRuntimeAndTorch) {
  check<onnx_gen::tiny_cnn_op13>("tiny_cnn_op13");
  check<onnx_gen::tiny_cnn_op17>("tiny_cnn_op17");
  check<onnx_gen::transformer_encoder_op13>("transformer_encoder_op13");
  check<onnx_gen::transformer_encoder_op17>("transformer_encoder_op17");
  check<onnx_gen::lstm_op13>("lstm_op13");
  check<onnx_gen::lstm_op17>("lstm_op17");
  check<onnx_gen::bigru_op13>("bigru_op13");
  check<onnx_gen::bigru_op17>("bigru_op17");
}

TEST(OnnxGenerated, CallRunsOneOp) {
  Tensor x = tensor({-1.f, 2.f, -3.f, 4.f}).reshape({2, 2});
  TensorList y = onnx::call("LeakyRelu", {x}, {{"alpha", 0.5}});
  EXPECT_EQ(y[0].to_vector<float>(), (std::vector<float>{-0.5f, 2.f, -1.5f, 4.f}));
  TensorList top = onnx::call("TopK", {x, tensor({int64_t{1}})}, {{"axis", int64_t{1}}}, 11, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_THROW(onnx::call("NoSuchOp", {x}), onnx::UnsupportedError);
}

TEST(OnnxGenerated, RefusesControlFlow) {
  const fs::path model = fs::path(EMBER_ONNX_NODE_DATA) / "test_if" / "model.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << "libonnx-testdata is not installed";
  try {
    onnx::generate_module(onnx::load(model.string()));
    FAIL() << "expected UnsupportedError";
  } catch (const onnx::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("control flow"), std::string::npos) << e.what();
  }
}

TEST(OnnxGenerated, NamesComeFromTheGraph) {
  const fs::path dir = fs::path(EMBER_TEST_DATA) / "onnx_models" / "tiny_cnn_op17";
  onnx::GeneratedModule g =
      onnx::generate_module(onnx::load((dir / "model.onnx").string()), {.class_name = "TinyCnn"});
  EXPECT_NE(g.header.find("class TinyCnn : public ember::nn::Module"), std::string::npos);
  EXPECT_NE(g.header.find("ember::Tensor c2_weight;  // 'c2.weight' {16, 8, 3, 3}"),
            std::string::npos);
  EXPECT_NE(g.source.find("conv2d(MaxPool, c2_weight, c2_bias, {.stride = {2, 2}, "
                          ".padding = {1, 1}})"),
            std::string::npos)
      << g.source;
  EXPECT_TRUE(g.fallbacks.empty());
  ASSERT_EQ(g.weights.size(), 6u);
}

// A generated module is an ordinary one: gradients reach every parameter, through the ember
// calls and the onnx::call fallbacks alike.
template <class M>
void check_gradients(const std::string& name) {
  SCOPED_TRACE(name);
  M module;
  store::load_into(module.state_dict(),
                   (fs::path(EMBER_ONNX_GEN_DIR) / (name + ".safetensors")).string());
  const fs::path dir = fs::path(EMBER_TEST_DATA) / "onnx_models" / name / "test_data_set_1";
  Tensor x = onnx::load_tensor((dir / "input_0.pb").string());
  Tensor loss = square(outputs_of(module, x)[0]).sum();
  Gradients grads = loss.backward();
  ASSERT_FALSE(module.named_parameters().empty());
  for (auto& [key, p] : module.named_parameters()) {
    ASSERT_TRUE(p.grad(grads).defined()) << key;
    EXPECT_EQ(p.grad(grads).shape(), p.shape()) << key;
  }
}

TEST(OnnxGenerated, Trains) {
  check_gradients<onnx_gen::tiny_cnn_op17>("tiny_cnn_op17");
  check_gradients<onnx_gen::transformer_encoder_op17>("transformer_encoder_op17");
  check_gradients<onnx_gen::lstm_op17>("lstm_op17");
}

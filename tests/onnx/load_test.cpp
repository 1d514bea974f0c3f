// Loading and running ONNX models: a small model written here byte by byte through ONNX's
// Python-free path (the official test data's models), truncated and garbage files, external
// data, the one error for unsupported ops, dynamic batch sizes and freed intermediates.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ember/ember.h"
#include "ember/onnx.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

const fs::path kNode = EMBER_ONNX_NODE_DATA;

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool have_data() { return fs::is_directory(kNode / "test_abs"); }

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Onnx, LoadsAndRunsAModel) {
  if (!have_data()) GTEST_SKIP() << "libonnx-testdata is not installed";
  onnx::Model m = onnx::load((kNode / "test_relu" / "model.onnx").string());
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_GE(m.opset(), 14);
  Tensor x = tensor<float>({-1, 2, -3, 4}, {1, 2, 2});
  auto out = m.run({{"x", x}});
  ASSERT_EQ(out.count("y"), 1u);
  EXPECT_EQ(out["y"].to_vector<float>(), (std::vector<float>{0, 2, 0, 4}));
  // The declared shape [3, 4, 5] has fixed dims, but only the rank is enforced.
  EXPECT_EQ(m.run(TensorList{tensor<float>({-5}, {1, 1, 1})})[0].to_vector<float>(),
            std::vector<float>{0});
}

TEST(Onnx, RunsOnTheInputsDevice) {
  if (!have_data()) GTEST_SKIP() << "libonnx-testdata is not installed";
  onnx::Model m = onnx::load((kNode / "test_add_bcast" / "model.onnx").string());
  for (Device d : {Device::flex(), Device::cpu().eager()}) {
    Tensor a = ones({3, 4, 5}, {.device = d}), b = full({5}, 2.0f, {.device = d});
    TensorList y = m.run(TensorList{a, b});
    EXPECT_EQ(y[0].device(), d);
    EXPECT_FLOAT_EQ(y[0].sum().item<float>(), 180.f);
  }
}

TEST(Onnx, BadInputsAreClearErrors) {
  if (!have_data()) GTEST_SKIP() << "libonnx-testdata is not installed";
  onnx::Model m = onnx::load((kNode / "test_relu" / "model.onnx").string());
  EXPECT_NE(error_of<ValueError>([&] { m.run(std::map<std::string, Tensor>{}); })
                .find("missing inputs: 'x'"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] { m.run({{"nope", ones({1})}}); }).find("'nope'"),
            std::string::npos);
  EXPECT_NE(error_of<DTypeError>([&] { m.run({{"x", ones({3, 4, 5}, {.dtype = kI64})}}); })
                .find("declares float32, got int64"),
            std::string::npos);
}

TEST(Onnx, TruncatedAndGarbageFilesGiveModelErrors) {
  if (!have_data()) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::string bytes = read_bytes(kNode / "test_conv_with_strides_padding" / "model.onnx");
  ASSERT_GT(bytes.size(), 40u);
  // Every prefix either fails with an ember error or (rarely) parses to a model the checker and
  // loader accept; nothing crashes or throws anything else.
  for (size_t n = 0; n < bytes.size(); n += 7) {
    try {
      onnx::load_bytes(bytes.substr(0, n), "cut");
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("[onnx] cut: ", 0), 0u) << e.what();
    }
  }
  std::string garbage(512, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = char((i * 2654435761u) >> 13);
  EXPECT_NE(error_of<onnx::ModelError>([&] { onnx::load_bytes(garbage, "junk"); }).find("[onnx] junk: "),
            std::string::npos);
  EXPECT_NE(error_of<onnx::ModelError>([&] { onnx::load_bytes("", "empty"); }).find("empty"),
            std::string::npos);
  EXPECT_NE(error_of<onnx::IOError>([&] { onnx::load("/nonexistent/model.onnx"); })
                .find("[onnx] /nonexistent/model.onnx"),
            std::string::npos);
  EXPECT_NE(error_of<onnx::IOError>([&] { onnx::load("/tmp"); }).find("not a regular file"),
            std::string::npos);
}

TEST(Onnx, TensorFilesAreChecked) {
  if (!have_data()) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::string bytes = read_bytes(kNode / "test_abs" / "test_data_set_0" / "input_0.pb");
  Tensor t = onnx::load_tensor_bytes(bytes);
  EXPECT_EQ(t.shape(), Shape({3, 4, 5}));
  // Cutting the raw bytes short leaves raw_data smaller than the dims need (or an unparsable
  // message): a ModelError either way.
  std::string msg = error_of<onnx::ModelError>(
      [&] { onnx::load_tensor_bytes(bytes.substr(0, bytes.size() - 8), "cut.pb"); });
  EXPECT_EQ(msg.rfind("[onnx] cut.pb: ", 0), 0u) << msg;
}

TEST(Onnx, UnsupportedOpsAreListedInOneError) {
  if (!have_data()) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::string msg = error_of<onnx::UnsupportedError>(
      [&] { onnx::load((kNode / "test_tfidfvectorizer_tf_only_bigrams_skip0" / "model.onnx").string()); });
  EXPECT_NE(msg.find("not supported: TfIdfVectorizer (1 node, first '"), std::string::npos) << msg;
}

TEST(Onnx, ConstantSubgraphsFoldAtLoad) {
  if (!have_data()) GTEST_SKIP() << "libonnx-testdata is not installed";
  // Constant -> Add(x, c): the Constant node folds away, leaving one node.
  onnx::Model m = onnx::load((kNode / "test_reshape_reordered_all_dims" / "model.onnx").string());
  EXPECT_EQ(m.num_nodes(), 1u);
}

TEST(Onnx, ExternalDataIsReadInsideTheModelFolder) {
  // tests/gen/gen_onnx_external.py: y = x + w, w in external.bin at offset 16.
  const fs::path dir = fs::path(EMBER_TEST_DATA) / "onnx";
  onnx::Model m = onnx::load((dir / "external.onnx").string());
  EXPECT_EQ(m.inputs()[0].dim_names[0], "batch");
  // A new batch size needs no reload.
  for (int64_t batch : {1, 4}) {
    Tensor y = m.run({{"x", zeros({batch, 3})}})["y"];
    EXPECT_EQ(y.shape(), Shape({batch, 3}));
    EXPECT_FLOAT_EQ(y.sum().item<float>(), 1.5f * float(batch));
  }
  std::string msg = error_of<onnx::ModelError>([&] { onnx::load((dir / "escape.onnx").string()); });
  EXPECT_NE(msg.find("must be a relative path inside the model's folder"), std::string::npos) << msg;
  msg = error_of<onnx::ModelError>([&] { onnx::load((dir / "short.onnx").string()); });
  EXPECT_NE(msg.find("too few for 12 at offset 20"), std::string::npos) << msg;
  msg = error_of<onnx::ModelError>(
      [&] { onnx::load_bytes(read_bytes(dir / "external.onnx"), "mem"); });
  EXPECT_NE(msg.find("a model loaded from bytes has no folder"), std::string::npos) << msg;
}

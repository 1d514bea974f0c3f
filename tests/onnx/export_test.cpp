// onnx::export_module: ember models traced to ONNX run in onnxruntime-node (npm, through
// tests/onnx/ort_harness.h) with the module's own outputs within 1e-5 (abs) + 1e-5 (rel), and
// ember's importer (onnx::load) gives them back; a dynamic batch runs at a new size in both.
// The onnxruntime half skips only when node is not installed; with node but without
// onnxruntime-node (scripts/node-deps.sh) it fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/models/resnet.h"
#include "ember/onnx.h"
#include "onnx/ort_harness.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

struct Mlp : nn::Module {
  nn::Linear fc1{{.in = 8, .out = 16}}, fc2{{.in = 16, .out = 4}};
  Mlp() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override {
    return softmax(fc2(gelu(fc1(x))), -1);
  }
};

struct Cnn : nn::Module {
  nn::Conv2d c1{{.in = 3, .out = 8, .kernel = 3, .padding = 1}};
  nn::BatchNorm2d bn{8};
  nn::MaxPool2d pool{{.kernel = 2}};
  nn::Conv2d c2{{.in = 8, .out = 16, .kernel = 3, .stride = 2, .padding = 1}};
  nn::AdaptiveAvgPool2d gap{1};
  nn::Linear fc{{.in = 16, .out = 10}};
  Cnn() { register_modules({{"c1", c1}, {"bn", bn}, {"pool", pool}, {"c2", c2}, {"gap", gap}, {"fc", fc}}); }
  Tensor forward(const Tensor& x) override {
    Tensor h = pool(relu(bn(c1(x))));
    h = gap(relu(c2(h)));
    return fc(h.flatten(1));
  }
};

// The path of a fresh folder for one test's files.
fs::path work_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("ember_export_" + name + "_" + std::to_string(getpid()));
  fs::create_directories(p);
  return p;
}

void expect_close(const Tensor& got, const Tensor& want, const char* what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_LE(ember::test::excess(got, want.to_vector<double>(), 1e-5, 1e-5), 0.0)
      << what << ": outputs differ beyond 1e-5 + 1e-5 rel";
}

// Exports `m` for `x`, then checks onnxruntime's and the importer's outputs on `x` and on each
// of `more` (other sizes of the dynamic axes) against the module's.
void check_export(nn::Module& m, const Tensor& x, const onnx::ExportOptions& o, const std::string& name,
                  const std::vector<Tensor>& more = {}) {
  SCOPED_TRACE(name);
  fs::path dir = work_dir(name);
  fs::path path = dir / "model.onnx";
  onnx::export_module(m, {x}, path.string(), o);
  ASSERT_TRUE(fs::exists(path));
  onnx::Model back = onnx::load(path.string());
  EXPECT_EQ(back.opset(), o.opset);
  EXPECT_EQ(back.producer(), "ember");
  const std::string node = ember::test::find_node();
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), more.begin(), more.end());
  m.eval();
  for (const Tensor& in : inputs) {
    SCOPED_TRACE(shape_str(in.shape()));
    Tensor want;
    {
      NoGradGuard no_grad;
      want = m.forward(in);
    }
    expect_close(back.run({{"input_0", in}}).at("output_0"), want, "ember's importer");
    if (node.empty()) continue;
    ASSERT_TRUE(ember::test::have_onnxruntime()) << "run scripts/node-deps.sh";
    auto ort = ember::test::run_ort(node, path, {{"input_0", in}}, dir);
    ASSERT_TRUE(ort.count("output_0"));
    EXPECT_EQ(ort["output_0"].first, std::vector<int64_t>(want.shape().begin(), want.shape().end()));
    EXPECT_LE(ember::test::excess(want, ort["output_0"].second, 1e-5, 1e-5), 0.0)
        << "onnxruntime and ember differ beyond 1e-5 + 1e-5 rel";
  }
  if (!std::getenv("EMBER_EXPORT_KEEP")) fs::remove_all(dir);  // kept for a look with onnx's tools
}

}  // namespace

TEST(OnnxExport, Mlp) {
  manual_seed(1);
  Mlp m;
  for (int64_t opset : {13, 17})
    check_export(m, randn({3, 8}), {.opset = opset, .dynamic_axes = {{"input_0", {{0, "batch"}}}}},
                 "mlp_op" + std::to_string(opset), {randn({5, 8})});
}

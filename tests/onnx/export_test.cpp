// onnx::export_module: ember models traced to ONNX run in onnxruntime-node (npm, through
// tests/onnx/ort_harness.h) with the module's own outputs within 1e-5 (abs) + 1e-5 (rel), and
// ember's importer (onnx::load) gives them back; a dynamic batch runs at a new size in both.
// The onnxruntime half skips only when node is not installed; with node but without
// onnxruntime-node (scripts/node-deps.sh) it fails.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/models/efficientnet.h"
#include "ember/models/mobilenet.h"
#include "ember/models/resnet.h"
#include "ember/models/vit.h"
#include "ember/onnx.h"
#include "onnx/ort_harness.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

struct Mlp : nn::Module {
  nn::Linear fc1{{.in = 8, .out = 16}}, fc2{{.in = 16, .out = 4}};
  Mlp() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override { return softmax(fc2(gelu(fc1(x))), -1); }
};

struct Cnn : nn::Module {
  nn::Conv2d c1{{.in = 3, .out = 8, .kernel = 3, .padding = 1}};
  nn::BatchNorm2d bn{8};
  nn::MaxPool2d pool{{.kernel = 2}};
  nn::Conv2d c2{{.in = 8, .out = 16, .kernel = 3, .stride = 2, .padding = 1}};
  nn::AdaptiveAvgPool2d gap{1};
  nn::Linear fc{{.in = 16, .out = 10}};
  Cnn() {
    register_modules(
        {{"c1", c1}, {"bn", bn}, {"pool", pool}, {"c2", c2}, {"gap", gap}, {"fc", fc}});
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = pool(relu(bn(c1(x))));
    h = gap(relu(c2(h)));
    return fc(h.flatten(1));
  }
};

// Token ids [N, T] to class scores: embedding, a transformer layer, mean over the sequence.
struct TextClassifier : nn::Module {
  nn::Embedding embed{20, 16};
  nn::TransformerEncoderLayer layer{{.d_model = 16,
                                     .nhead = 4,
                                     .dim_feedforward = 32,
                                     .activation = "gelu",
                                     .batch_first = true,
                                     .norm_first = true}};
  nn::Linear head{{.in = 16, .out = 3}};
  TextClassifier() { register_modules({{"embed", embed}, {"layer", layer}, {"head", head}}); }
  Tensor forward(const Tensor& ids) override { return head(layer(embed(ids)).mean({1})); }
};

// A table longer than any sequence, cut to the input's length: the cut follows a dynamic dim.
struct Positional : nn::Module {
  Tensor pe;
  Positional() { register_buffer("pe", pe = randn({32, 8})); }
  Tensor forward(const Tensor& x) override {
    const int64_t t = x.size(1);
    return x + slice(pe, 0, 0, t) * pe.narrow(0, 1, t) + x.select(1, t - 1).unsqueeze(1);
  }
};

// The path of a fresh folder for one test's files.
fs::path work_dir(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("ember_export_" + name + "_" + std::to_string(getpid()));
  fs::create_directories(p);
  return p;
}

void expect_close(const Tensor& got, const Tensor& want, const char* what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_LE(ember::test::excess(got, want.to_vector<double>(), 1e-5, 1e-5), 0.0)
      << what << ": outputs differ beyond 1e-5 + 1e-5 rel";
}

// Exports `f` for `x`, then checks onnxruntime's and the importer's outputs on `x` and on each
// of `more` (other sizes of the dynamic axes) against f's own. With `forward`, f is m.forward
// and export_module exports it; otherwise export_function does, naming m's parameters.
void check_function(const onnx::ExportFunction& f, nn::Module* m, const Tensor& x,
                    const onnx::ExportOptions& o, const std::string& name,
                    const std::vector<Tensor>& more = {}, bool forward = false) {
  SCOPED_TRACE(name);
  fs::path dir = work_dir(name);
  fs::path path = dir / "model.onnx";
  if (m && forward)
    onnx::export_module(*m, {x}, path.string(), o);
  else
    onnx::export_function(f, {x}, path.string(), o, m);
  ASSERT_TRUE(fs::exists(path));
  onnx::Model back = onnx::load(path.string());
  EXPECT_EQ(back.opset(), o.opset);
  EXPECT_EQ(back.producer(), "ember");
  const std::string node = ember::test::find_node();
  std::vector<Tensor> inputs{x};
  inputs.insert(inputs.end(), more.begin(), more.end());
  if (m) m->eval();
  for (const Tensor& in : inputs) {
    SCOPED_TRACE(shape_str(in.shape()));
    TensorList want;
    {
      NoGradGuard no_grad;
      want = f({in});
    }
    auto got = back.run({{"input_0", in}});
    ASSERT_EQ(got.size(), want.size());
    for (size_t j = 0; j < want.size(); ++j) {
      const std::string out = "output_" + std::to_string(j);
      SCOPED_TRACE(out);
      const Tensor w = want[j].to(kF64);
      expect_close(got.at(out).to(kF64), w, "ember's importer");
      if (node.empty()) continue;
      ASSERT_TRUE(ember::test::have_onnxruntime()) << "run scripts/node-deps.sh";
      static std::map<std::string, ember::test::OrtOutputs> cache;  // one run per model and input
      const std::string key = path.string() + shape_str(in.shape());
      if (!cache.count(key)) cache[key] = ember::test::run_ort(node, path, {{"input_0", in}}, dir);
      auto& ort = cache[key];
      ASSERT_TRUE(ort.count(out));
      EXPECT_EQ(ort[out].first, std::vector<int64_t>(w.shape().begin(), w.shape().end()));
      EXPECT_LE(ember::test::excess(w, ort[out].second, 1e-5, 1e-5), 0.0)
          << "onnxruntime and ember differ beyond 1e-5 + 1e-5 rel";
    }
  }
  if (!std::getenv("EMBER_EXPORT_KEEP")) fs::remove_all(dir);  // kept for a look with onnx's tools
}

void check_export(nn::Module& m, const Tensor& x, const onnx::ExportOptions& o,
                  const std::string& name, const std::vector<Tensor>& more = {}) {
  check_function([&m](const TensorList& in) { return TensorList{m.forward(in[0])}; }, &m, x, o,
                 name, more, /*forward=*/true);
}

}  // namespace

TEST(OnnxExport, Mlp) {
  manual_seed(1);
  Mlp m;
  for (int64_t opset : {13, 17})
    check_export(m, randn({3, 8}), {.opset = opset, .dynamic_axes = {{"input_0", {{0, "batch"}}}}},
                 "mlp_op" + std::to_string(opset), {randn({5, 8})});
}

TEST(OnnxExport, Cnn) {
  manual_seed(2);
  Cnn m;
  {  // batch statistics into the running ones, so eval-mode batch norm is not the identity
    NoGradGuard no_grad;
    m.train();
    for (int k = 0; k < 3; ++k) m.forward(randn({4, 3, 12, 12}) * 2.0 + 0.5);
  }
  const std::string bytes = onnx::export_bytes(m, {randn({2, 3, 12, 12})});
  for (const char* key : {"c1.weight", "bn.running_mean", "fc.bias"})
    EXPECT_NE(bytes.find(key), std::string::npos) << "no initializer named " << key;
  EXPECT_TRUE(m.is_training()) << "export leaves the module's mode as it was";
  for (int64_t opset : {13, 17})
    check_export(m, randn({2, 3, 12, 12}),
                 {.opset = opset, .dynamic_axes = {{"input_0", {{0, "batch"}}}}},
                 "cnn_op" + std::to_string(opset), {randn({1, 3, 12, 12})});
  // On the lazy cpu device (fusion below the tracing layer).
  Cnn on_cpu;
  on_cpu.copy_state_from(m);
  on_cpu.to(Device::cpu());
  check_export(on_cpu, randn({2, 3, 12, 12}).to(Device::cpu()),
               {.opset = 17, .dynamic_axes = {{"input_0", {{0, "batch"}}}}}, "cnn_cpu",
               {randn({3, 3, 12, 12}).to(Device::cpu())});
}

TEST(OnnxExport, TransformerEncoder) {
  manual_seed(3);
  nn::TransformerEncoderLayer layer(
      {.d_model = 16, .nhead = 2, .dim_feedforward = 32, .batch_first = true});
  nn::TransformerEncoder m(layer, 2, nn::LayerNormOptions{.shape = {16}});
  for (int64_t opset : {13, 17})
    check_export(m, randn({2, 5, 16}),
                 {.opset = opset, .dynamic_axes = {{"input_0", {{0, "batch"}}}}},
                 "transformer_op" + std::to_string(opset), {randn({3, 5, 16})});
  // Batch and sequence both symbolic: the attention's [batch * heads, seq, d] reshapes hold a
  // product of the two.
  check_export(m, randn({2, 5, 16}),
               {.opset = 17, .dynamic_axes = {{"input_0", {{0, "batch"}, {1, "seq"}}}}},
               "transformer_seq", {randn({3, 7, 16}), randn({1, 2, 16})});
}

// A causal mask made inside forward from the sequence length, which is dynamic.
TEST(OnnxExport, CausalMaskFollowsSequence) {
  manual_seed(12);
  nn::TransformerEncoderLayer layer(
      {.d_model = 8, .nhead = 2, .dim_feedforward = 16, .batch_first = true});
  nn::TransformerEncoder enc(layer, 1);
  auto f = [&enc](const TensorList& in) {
    return TensorList{enc(in[0], nn::generate_square_subsequent_mask(in[0].size(1)))};
  };
  for (int64_t opset : {13, 17})
    check_function(f, &enc, randn({2, 4, 8}),
                   {.opset = opset, .dynamic_axes = {{"input_0", {{0, "batch"}, {1, "seq"}}}}},
                   "causal_op" + std::to_string(opset), {randn({1, 6, 8})});
}

TEST(OnnxExport, TextClassifierWithTokenIds) {
  manual_seed(10);
  TextClassifier m;
  auto ids = [](int64_t n, int64_t t) { return randint(0, 20, {n, t}); };
  check_export(m, ids(2, 6),
               {.opset = 17, .dynamic_axes = {{"input_0", {{0, "batch"}, {1, "seq"}}}}}, "text",
               {ids(3, 4), ids(1, 9)});
}

TEST(OnnxExport, SliceFollowsDynamicDim) {
  manual_seed(11);
  Positional m;
  check_export(m, randn({2, 5, 8}),
               {.opset = 13, .dynamic_axes = {{"input_0", {{0, "batch"}, {1, "seq"}}}}},
               "positional", {randn({3, 9, 8}), randn({1, 1, 8})});
}

TEST(OnnxExport, ResNet18) {
  manual_seed(4);
  auto m = models::resnet18({.num_classes = 10, .width = 8});
  {
    NoGradGuard no_grad;
    m->train();
    m->forward(randn({2, 3, 32, 32}));
  }
  check_export(*m, randn({1, 3, 32, 32}),
               {.opset = 17, .dynamic_axes = {{"input_0", {{0, "batch"}}}}}, "resnet18",
               {randn({2, 3, 32, 32})});
}

// The zoo's other vision models, narrowed: depthwise convolutions and ReLU6 (MobileNetV2),
// squeeze-excitation, SiLU and stochastic depth in eval mode (EfficientNet), the class token and
// position embedding of a ViT.
TEST(OnnxExport, ZooVisionModels) {
  manual_seed(15);
  auto mobilenet = models::mobilenet_v2({.num_classes = 5, .width_mult = 0.25});
  check_export(*mobilenet, randn({1, 3, 32, 32}),
               {.opset = 13, .dynamic_axes = {{"input_0", {{0, "batch"}}}}}, "mobilenet_v2",
               {randn({2, 3, 32, 32})});
  models::EfficientNetConfig ec{.num_classes = 5, .width_mult = 0.25, .depth_mult = 0.25};
  auto efficientnet = models::efficientnet_b0(ec);
  check_export(*efficientnet, randn({1, 3, 32, 32}),
               {.opset = 17, .dynamic_axes = {{"input_0", {{0, "batch"}}}}}, "efficientnet",
               {randn({2, 3, 32, 32})});
  auto vit = models::vit_b_16({.image_size = 32,
                               .patch_size = 8,
                               .num_layers = 2,
                               .num_heads = 2,
                               .hidden_dim = 16,
                               .mlp_dim = 32,
                               .num_classes = 5});
  check_export(*vit, randn({1, 3, 32, 32}),
               {.opset = 17, .dynamic_axes = {{"input_0", {{0, "batch"}}}}}, "vit",
               {randn({2, 3, 32, 32})});
}

TEST(OnnxExport, Lstm) {
  manual_seed(5);
  nn::LSTM m({.in = 4, .hidden = 6, .layers = 2});
  check_export(m, randn({5, 2, 4}), {.opset = 17, .dynamic_axes = {{"input_0", {{1, "batch"}}}}},
               "lstm", {randn({5, 3, 4})});
}

TEST(OnnxExport, BidirectionalGru) {
  manual_seed(6);
  nn::GRU m({.in = 4, .hidden = 6, .batch_first = true, .bidirectional = true});
  for (int64_t opset : {13, 17})
    check_export(m, randn({2, 5, 4}),
                 {.opset = opset, .dynamic_axes = {{"input_0", {{0, "batch"}}}}},
                 "bigru_op" + std::to_string(opset), {randn({3, 5, 4})});
}

// Every op without an ONNX form is named in one error, with its call count.
TEST(OnnxExport, UnsupportedOpsInOneError) {
  auto f = [](const TensorList& in) {
    Tensor x = in[0];
    Tensor y = cumprod(x, 1) + cumprod(x, 0);
    return TensorList{y + roll(x, {1}) + relu(x)};
  };
  try {
    onnx::export_bytes(f, {randn({3, 4})});
    FAIL() << "expected onnx::UnsupportedError";
  } catch (const onnx::UnsupportedError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[onnx] export: 2 ember ops have no ONNX form at opset 17: cumprod: 2 calls; roll "
              "(of the flattened tensor): 1 call");
  }
}

// Dropout in training mode (a module traced through export_function without being named):
// the error says where the random op comes from.
TEST(OnnxExport, TrainingModeDropoutIsNamed) {
  nn::Dropout drop(0.5);
  auto f = [&drop](const TensorList& in) { return TensorList{drop(in[0])}; };
  try {
    onnx::export_bytes(f, {randn({2, 3})});
    FAIL() << "expected onnx::UnsupportedError";
  } catch (const onnx::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("is a module in training mode?"), std::string::npos)
        << e.what();
  }
  Tensor x = randn({2, 3});
  onnx::Model m = onnx::load_bytes(onnx::export_bytes(f, {x}, {}, &drop));  // eval: identity
  expect_close(m.run({x})[0], x, "dropout in eval mode");
  EXPECT_TRUE(drop.is_training());
}

// A failed export leaves the file as it was; a good one replaces it whole.
TEST(OnnxExport, WritesAtomically) {
  fs::path dir = work_dir("atomic");
  const std::string path = (dir / "model.onnx").string();
  std::ofstream(path) << "old";
  auto bad = [](const TensorList& in) { return TensorList{cumprod(in[0], 0)}; };
  EXPECT_THROW(onnx::export_function(bad, {randn({2, 3})}, path), onnx::UnsupportedError);
  std::ifstream f(path);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(f)), {}), "old");
  Mlp m;
  onnx::export_module(m, {randn({2, 8})}, path);
  EXPECT_EQ(onnx::load(path).outputs().size(), 1u);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1u) << "no temporary file is left beside the model";
  fs::remove_all(dir);
}

TEST(OnnxExport, BadOptions) {
  Mlp m;
  EXPECT_THROW(onnx::export_bytes(m, {randn({2, 8})}, {.opset = 12}), ValueError);
  EXPECT_THROW(onnx::export_bytes(m, {randn({2, 8})}, {.dynamic_axes = {{"x", {{0, "n"}}}}}),
               ValueError);
  EXPECT_THROW(onnx::export_bytes(m, {randn({2, 8}), randn({2, 8})}), ValueError);
}

// Many ops at once, each an output of one exported function with a dynamic batch.
TEST(OnnxExport, OpsAtOpsets13And17) {
  manual_seed(7);
  const Tensor w1 = randn({5, 3, 3}), wt = randn({3, 2, 2, 2}), table = randn({6, 4});
  const Tensor ids = tensor(std::vector<int64_t>{0, 5, 2}, {3}, kI64);
  const Tensor perm = tensor(std::vector<int64_t>{0, 3, 1, 2}, {4}, kI64);
  auto f = [&](const TensorList& in) {
    const Tensor& x = in[0];  // [B, 3, 4]
    const Tensor img = x.reshape({x.size(0), 3, 2, 2});
    TensorList o;
    o.push_back(slice(x, 2, 1, -1) + x.select(2, -1).unsqueeze(2));
    o.push_back(x.narrow(2, 1, 2).permute({0, 2, 1}).flatten(1));
    o.push_back(cat({x, x * 2.0}, 1) - stack({x, x}, 1).flatten(1, 2));
    TensorList parts = chunk(x, 2, 2);
    o.push_back(parts[0] * parts[1]);
    o.push_back(gelu(x, "tanh") + silu(x) + softplus(x, 2.0) + hardswish(x) + leaky_relu(x, 0.2) +
                elu(x) + sigmoid(x) * tanh(x));
    o.push_back(exp(x) + log(abs(x) + 1.0) + sqrt(abs(x)) + rsqrt(abs(x) + 1.0) + pow(x, 2.0));
    o.push_back(remainder(x, 0.7) + floor_divide(x, scalar_tensor(0.3)) + clamp(x, -0.5, 0.5));
    o.push_back(where(x > 0, x, x * 0.1) + maximum(x, x.flip({2})) + masked_fill(x, x < 0, 1.5));
    o.push_back(sum(x, {1}) + mean(x, {1}) + amax(x, {1}) + amin(x, {1}) + var(x, {1}) +
                ember::std(x, {1}) + logsumexp(x, {1}));
    auto [mx, arg] = max(x, 2, true);
    o.push_back(mx + arg.to(kF32) + argmax(x, 1, true).to(kF32).unsqueeze(3).squeeze(3));
    o.push_back(cumsum(x, 2) + std::get<0>(topk(x, 4, 2)));
    o.push_back(log_softmax(x, 1) + layer_norm(x, {4}));
    o.push_back(pad(x, {1, 2}, "constant", 0.5) + pad(x, {2, 1}, "reflect"));
    o.push_back(repeat(x, {1, 2, 1}) + tril(repeat(x, {1, 2, 1})));
    o.push_back(conv1d(x, w1, {}, {.stride = {2}, .padding = {1}}));
    o.push_back(conv_transpose2d(img, wt, {}, {.stride = {2}}));
    o.push_back(avg_pool2d(img, {.kernel_size = {2}, .stride = {1}, .padding = {1}}) +
                max_pool1d(x, {.kernel_size = {2}}).sum());
    o.push_back(embedding(ids, table).unsqueeze(0) + x.mean({1}, true));
    o.push_back(zeros_like(x) + ones({x.size(0), 3, 4}) +
                arange(x.size(0)).to(kF32).reshape({-1, 1, 1}));
    o.push_back(
        interpolate(img, {.scale_factor = {2.0}}).flatten(2) +
        interpolate(img, {.size = {4, 4}, .mode = "bilinear", .align_corners = false}).flatten(2));
    o.push_back(std::get<0>(sort(x, 2)) + argsort(x, 1, true).to(kF32) + trunc(x * 3.0) +
                roll(x, {1, -1}, {1, 2}) + log10(abs(x) + 1.0) + atan2(x, x.flip({2})));
    o.push_back(logical_and(any(x > 0, {2}), all(x > -1, {2})) & isfinite(x).select(2, 0));
    o.push_back(count_nonzero(x > 0, {1}));
    o.push_back(group_norm(img, 3).flatten(2) + rms_norm(x, {4}));
    o.push_back(scaled_dot_product_attention(x, x * 0.5, x, {.is_causal = true}));
    o.push_back(one_hot(argmax(x, 2), 4));
    o.push_back(index_select(x, 2, perm) + gather(x, 1, zeros({x.size(0), 1, 4}, kI64)));
    return o;
  };
  for (int64_t opset : {13, 17})
    check_function(f, nullptr, randn({2, 3, 4}),
                   {.opset = opset, .dynamic_axes = {{"input_0", {{0, "batch"}}}}},
                   "ops_op" + std::to_string(opset), {randn({3, 3, 4})});
}

// interpolate as Resize, with dynamic spatial sizes where scale factors set the output's.
TEST(OnnxExport, Interpolate) {
  manual_seed(14);
  auto f = [](const TensorList& in) {
    const Tensor& x = in[0];  // [N, C, H, W]
    return TensorList{
        interpolate(x, {.scale_factor = {2.0}}),
        interpolate(x, {.scale_factor = {1.5, 2.0}, .mode = "bilinear"}),
        interpolate(x, {.scale_factor = {2.0}, .mode = "bilinear", .align_corners = true}),
        interpolate(x, {.scale_factor = {2.0}, .mode = "bicubic"}),
        interpolate(x, {.size = {7, 3}, .mode = "bilinear"}),
        interpolate(x.flatten(2), {.scale_factor = {3.0}, .mode = "linear"})};
  };
  for (int64_t opset : {13, 17})
    check_function(f, nullptr, randn({1, 2, 4, 6}),
                   {.opset = opset, .dynamic_axes = {{"input_0", {{0, "n"}, {2, "h"}, {3, "w"}}}}},
                   "interpolate_op" + std::to_string(opset), {randn({2, 2, 5, 3})});
}

// Several inputs and outputs through export_function: an LSTM's initial and final states.
TEST(OnnxExport, FunctionWithStates) {
  manual_seed(8);
  nn::LSTM lstm({.in = 3, .hidden = 4});
  auto f = [&lstm](const TensorList& in) {
    auto [y, hc] = lstm.forward(in[0], in[1], in[2]);
    return TensorList{y, std::get<0>(hc), std::get<1>(hc)};
  };
  TensorList in{randn({4, 2, 3}), randn({1, 2, 4}), randn({1, 2, 4})};
  const std::string bytes = onnx::export_bytes(
      f, in, {.opset = 13, .input_names = {"x", "h0", "c0"}, .output_names = {"y", "hn", "cn"}},
      &lstm);
  EXPECT_NE(bytes.find("weight_hh_l0"), std::string::npos);
  onnx::Model m = onnx::load_bytes(bytes);
  ASSERT_EQ(m.inputs().size(), 3u);
  auto got = m.run({{"x", in[0]}, {"h0", in[1]}, {"c0", in[2]}});
  TensorList want = f(in);
  expect_close(got.at("y"), want[0], "y");
  expect_close(got.at("hn"), want[1], "hn");
  expect_close(got.at("cn"), want[2], "cn");
}

// A size that follows the dynamic dims in a way export cannot write is an error naming the op;
// one it can (a product of two of them) is computed in the graph.
TEST(OnnxExport, DynamicSizes) {
  const onnx::ExportOptions o{.dynamic_axes = {{"input_0", {{0, "n"}}}}};
  auto cube = [](const TensorList& in) {
    const int64_t n = in[0].size(0);
    return TensorList{zeros({n * n * n}) + in[0].sum()};
  };
  try {
    onnx::export_bytes(cube, {randn({2, 3})}, o);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("zeros: shape entry 0 is 8 in one trace and 27"),
              std::string::npos)
        << e.what();
  }
  auto host_table = [](const TensorList& in) {  // made on the host, sized by the batch
    const int64_t n = in[0].size(0);
    return TensorList{in[0] + tensor(std::vector<float>(size_t(n), 2.f), {n, 1})};
  };
  try {
    onnx::export_bytes(host_table, {randn({2, 3})}, o);
    FAIL() << "expected UnsupportedError";
  } catch (const onnx::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("add (a tensor made outside ember ops whose values"),
              std::string::npos)
        << e.what();
  }
  auto square = [](const TensorList& in) {
    const int64_t n = in[0].size(0);
    return TensorList{ones({n * n, 2}) * in[0].sum()};
  };
  onnx::Model m = onnx::load_bytes(onnx::export_bytes(square, {randn({2, 3})}, o));
  Tensor x = randn({4, 3});
  expect_close(m.run({x})[0], square({x})[0], "n * n rows");
}

// The second trace's inputs given: the dims that differ become symbolic.
TEST(OnnxExport, SecondInputs) {
  manual_seed(9);
  Mlp m;
  const std::string bytes =
      onnx::export_bytes(m, {randn({2, 8})}, {.second_inputs = {randn({3, 8})}});
  onnx::Model back = onnx::load_bytes(bytes);
  ASSERT_EQ(back.inputs()[0].dim_names.size(), 2u);
  EXPECT_EQ(back.inputs()[0].dim_names[0], "input_0_dim0");
  EXPECT_EQ(back.outputs()[0].dim_names[0], "input_0_dim0");
  EXPECT_EQ(back.inputs()[0].dims[1], 8);
  Tensor x = randn({6, 8});
  NoGradGuard no_grad;
  expect_close(back.run({x})[0], m.forward(x), "batch 6");
}

// torchvision's full ResNet-18 at 224 x 224 (a measurement, not run by ctest: build/tests/
// ember_onnx_tests --gtest_also_run_disabled_tests --gtest_filter=*ResNet18Full).
TEST(OnnxExport, DISABLED_ResNet18Full) {
  manual_seed(13);
  auto m = models::resnet18();
  m->eval();
  Tensor x = randn({1, 3, 224, 224});
  const auto t0 = std::chrono::steady_clock::now();
  const std::string bytes =
      onnx::export_bytes(*m, {x}, {.dynamic_axes = {{"input_0", {{0, "batch"}}}}});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("export: %.2f s, %.1f MB\n", s, double(bytes.size()) / 1e6);
  check_export(*m, x, {.dynamic_axes = {{"input_0", {{0, "batch"}}}}}, "resnet18_full");
}

// ember::onnx's runtime graph on the .onnx files that bench/peers/node/onnx_models.py writes (into
// $EMBER_BENCH_ONNX_DIR, else ~/.cache/ember/bench/onnx; written when missing), beside
// onnxruntime-node on the same files (bench/peers/onnxruntime_peer.py).
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "bench.h"
#include "ember/ember.h"
#include "ember/onnx.h"

using namespace ember;

namespace {

// The cache folder, with the models written by the generator when one is missing.
std::string model_path(const std::string& file) {
  namespace fs = std::filesystem;
  const char* env = std::getenv("EMBER_BENCH_ONNX_DIR");
  const char* home = std::getenv("HOME");
  fs::path dir = env && *env ? fs::path(env)
                             : fs::path(home && *home ? home : "/tmp") / ".cache/ember/bench/onnx";
  fs::path p = dir / file;
  if (!fs::exists(p) || !fs::exists(dir / "matmul_100MB.bin")) {
    std::string cmd = "/usr/bin/python3 '" EMBER_BENCH_SOURCE_DIR "/peers/node/onnx_models.py' '" +
                      dir.string() + "' > /dev/null";
    if (std::system(cmd.c_str()) != 0 || !fs::exists(p))
      throw std::runtime_error("onnx bench: cannot write " + p.string() + " (" + cmd + ")");
  }
  return p.string();
}

std::function<void()> infer_b1(const std::string& file) {
  auto m = std::make_shared<onnx::Model>(onnx::load(model_path(file)));
  Tensor x = randn({1, 3, 224, 224});
  std::string input = m->inputs().at(0).name;
  return [m, x, input] {
    NoGradGuard ng;
    for (auto& [name, y] : m->run({{input, x}})) bench::keep(y);
  };
}

}  // namespace

// Batch-1 inference of torchvision's ResNet-18 and MobileNetV2 exported at opset 17.
EMBER_BENCH({.name = "onnx_resnet18_b1", .setup = [] { return infer_b1("resnet18.onnx"); }});
EMBER_BENCH({.name = "onnx_mobilenet_v2_b1", .setup = [] { return infer_b1("mobilenet_v2.onnx"); }});

// onnx::load of a model whose one initializer (float32 [5120, 5120], 100 MiB) is external data:
// read, checked and prepared; the aligned weight is mapped, not read.
EMBER_BENCH({.name = "onnx_load_100MB",
             .setup =
                 [] {
                   std::string p = model_path("matmul_100MB.onnx");
                   return std::function<void()>([p] { onnx::Model m = onnx::load(p); });
                 },
             .warmup = 1,
             .iters = 5});

// The same load followed by one batch-1 run: the run reads every byte of the mapped weight
// (from the page cache), so this is what a first inference costs with mmap.
EMBER_BENCH({.name = "onnx_load_run_100MB",
             .setup =
                 [] {
                   std::string p = model_path("matmul_100MB.onnx");
                   Tensor x = randn({1, 5120});
                   return std::function<void()>([p, x] {
                     NoGradGuard ng;
                     onnx::Model m = onnx::load(p);
                     for (auto& [name, y] : m.run({{"x", x}})) bench::keep(y);
                   });
                 },
             .warmup = 1,
             .iters = 5});

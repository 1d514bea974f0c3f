// Fuzzes the ONNX loader on whole model files: protobuf parsing, ONNX's checker, every
// initializer and tensor attribute checked against its dims, the graph's conversion, the
// unsupported-op census and constant folding. Seeds: the official node models
// (libonnx-testdata), which scripts/fuzz.sh adds to the corpus.
#include <cstdint>
#include <string>

#include "ember/onnx.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  fuzz::run([&] {
    onnx::Model m = onnx::load_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
    for (const auto& v : m.inputs()) (void)v.name.size();
    (void)m.num_nodes();
  });
  return 0;
}

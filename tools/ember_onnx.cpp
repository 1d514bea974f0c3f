// ember-onnx: turns an ONNX model into readable ember C++ (a header and a source defining an
// nn::Module subclass) and a safetensors file of its weights.
//   ember-onnx model.onnx --out DIR [--name Model] [--namespace generated] [--stem model]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "ember/ember.h"
#include "ember/onnx.h"
#include "ember/store/safetensors.h"

namespace fs = std::filesystem;

namespace {

int usage() {
  std::cerr
      << "usage: ember-onnx MODEL.onnx --out DIR [--name CLASS] [--namespace NS] [--stem STEM]\n"
         "writes DIR/STEM.h, DIR/STEM.cpp and DIR/STEM.safetensors (STEM defaults to "
         "'model', CLASS to 'Model', NS to 'generated')\n";
  return 2;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f) throw ember::Error("[ember-onnx] cannot write " + p.string());
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, out, stem = "model";
  ember::onnx::GenerateOptions o;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    auto value = [&]() -> std::string { return k + 1 < argc ? argv[++k] : ""; };
    if (a == "--out")
      out = value();
    else if (a == "--name")
      o.class_name = value();
    else if (a == "--namespace")
      o.name_space = value();
    else if (a == "--stem")
      stem = value();
    else if (a == "-h" || a == "--help")
      return usage(), 0;
    else if (model.empty() && a.rfind("--", 0) != 0)
      model = a;
    else
      return usage();
  }
  if (model.empty() || out.empty() || stem.empty() || o.class_name.empty()) return usage();
  try {
    o.header_name = stem + ".h";
    ember::onnx::GeneratedModule g = ember::onnx::generate_module(ember::onnx::load(model), o);
    fs::create_directories(out);
    write(fs::path(out) / (stem + ".h"), g.header);
    write(fs::path(out) / (stem + ".cpp"), g.source);
    ember::store::save_safetensors((fs::path(out) / (stem + ".safetensors")).string(), g.weights);
    for (const auto& f : g.fallbacks) std::cerr << "ember-onnx: note: " << f << "\n";
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

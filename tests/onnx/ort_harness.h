#pragma once
// Runs ONNX models in onnxruntime-node (npm, CPU execution provider) through
// bench/peers/node/onnxruntime_peer.js `run`, for tests that compare its outputs with ember's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"

namespace ember::test {

inline const std::filesystem::path kNodeDir =
    std::filesystem::path(EMBER_SOURCE_DIR) / "bench" / "peers" / "node";

/// node from $EMBER_NODE, else the PATH; empty when there is none.
inline std::string find_node() {
  namespace fs = std::filesystem;
  if (const char* e = std::getenv("EMBER_NODE"); e && *e) return e;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && access((fs::path(d) / "node").c_str(), X_OK) == 0)
      return (fs::path(d) / "node");
  return {};
}

/// Whether onnxruntime-node is installed beside the peer script.
inline bool have_onnxruntime() {
  return std::filesystem::is_directory(kNodeDir / "node_modules" / "onnxruntime-node");
}

/// Outputs by name: dims and values.
using OrtOutputs = std::map<std::string, std::pair<std::vector<int64_t>, std::vector<double>>>;

/// Runs `model` in onnxruntime on float or int64 `inputs` (name -> tensor), files under `work`.
inline OrtOutputs run_ort(const std::string& node, const std::filesystem::path& model,
                          const std::map<std::string, Tensor>& inputs,
                          const std::filesystem::path& work) {
  nlohmann::json in = nlohmann::json::object();
  for (const auto& [name, t] : inputs) {
    std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
    if (t.dtype() == kI64)
      in[name] = {{"dims", dims}, {"type", "int64"}, {"data", t.to_vector<int64_t>()}};
    else
      in[name] = {{"dims", dims}, {"data", t.to_vector<float>()}};
  }
  auto in_path = work / "in.json", out_path = work / "out.json", log = work / "log.txt";
  std::ofstream(in_path) << in.dump();
  std::string cmd = "'" + node + "' '" + (kNodeDir / "onnxruntime_peer.js").string() + "' run '" +
                    model.string() + "' '" + in_path.string() + "' '" + out_path.string() +
                    "' > '" + log.string() + "' 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream logf(log);
  std::string printed((std::istreambuf_iterator<char>(logf)), {});
  EXPECT_EQ(rc, 0) << cmd << "\n" << printed;
  OrtOutputs out;
  if (rc != 0) return out;
  auto j = nlohmann::json::parse(std::ifstream(out_path));
  for (const auto& [name, v] : j.items())
    out[name] = {v.at("dims").get<std::vector<int64_t>>(), v.at("data").get<std::vector<double>>()};
  return out;
}

/// The largest amount by which `got` exceeds atol + rtol |want| (<= 0: within tolerance).
inline double excess(const Tensor& got, const std::vector<double>& want, double atol, double rtol) {
  auto g = got.to_vector<double>();
  EXPECT_EQ(g.size(), want.size());
  double worst = -1;
  for (size_t i = 0; i < g.size() && i < want.size(); ++i)
    worst = std::max(worst, std::abs(g[i] - want[i]) - (atol + rtol * std::abs(want[i])));
  return worst;
}

}  // namespace ember::test

// The official ONNX node cases (Debian's libonnx-testdata): every case's model runs on flex
// against its reference outputs with the backend runner's default tolerances (rtol 1e-3,
// atol 1e-7, NaN equal to NaN). tests/onnx/expected_failures.txt lists each case that fails,
// with its reason; the test fails when a listed case passes or an unlisted one fails.
//   EMBER_ONNX_TABLE=FILE       writes the pass table by op type (markdown) to FILE
//   EMBER_ONNX_UPDATE=1         rewrites expected_failures.txt from this run
//   EMBER_ONNX_CASE=test_abs    runs only the cases whose name contains the text
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "ember/ember.h"
#include "ember/onnx.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  // input_10 after input_9: order by the number after the prefix.
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    auto num = [&](const fs::path& p) {
      std::string s = p.stem().string().substr(prefix.size());
      return s.empty() ? 0 : std::atoi(s.c_str());
    };
    return num(a) < num(b);
  });
  return out;
}

// The first line of an error, without the data folder's path (the list stays portable).
std::string first_line(std::string s) {
  const std::string root = std::string(EMBER_ONNX_NODE_DATA) + "/";
  for (size_t p; (p = s.find(root)) != std::string::npos;) s.erase(p, root.size());
  std::string l = s.substr(0, s.find('\n'));
  return l.size() > 300 ? l.substr(0, 297) + "..." : l;
}

// "" when `got` matches `want`, else why not.
std::string compare(const Tensor& got, const Tensor& want, size_t k) {
  std::string o = "output " + std::to_string(k) + ": ";
  if (!got.defined()) return o + "missing";
  if (got.shape() != want.shape()) {
    std::ostringstream s;
    s << o << "shape " << got.shape() << ", expected " << want.shape();
    return s.str();
  }
  if (got.dtype() != want.dtype())
    return o + "dtype " + std::string(dtype_name(got.dtype())) + ", expected " +
           std::string(dtype_name(want.dtype()));
  if (want.numel() == 0) return "";
  auto g = got.to_vector<double>(), w = want.to_vector<double>();
  bool exact = !is_floating(want.dtype());
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (w[i] == g[i]) continue;
    if (!exact && std::abs(g[i] - w[i]) <= 1e-7 + 1e-3 * std::abs(w[i])) continue;
    return o + "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " +
           std::to_string(w[i]);
  }
  return "";
}

// "" when the value `got` matches `want` (tensors, sequences of tensors, or both empty).
std::string compare_value(const onnx::Value& got, const onnx::Value& want, size_t k) {
  std::string o = "output " + std::to_string(k) + ": ";
  if (got.kind != want.kind) return o + "a different kind of value (tensor, sequence, none)";
  if (want.is_tensor()) return compare(got.tensor, want.tensor, k);
  if (got.sequence.size() != want.sequence.size())
    return o + "sequence of " + std::to_string(got.sequence.size()) + ", expected " +
           std::to_string(want.sequence.size());
  for (size_t i = 0; i < want.sequence.size(); ++i)
    if (auto why = compare(got.sequence[i], want.sequence[i], k); !why.empty())
      return why + " (sequence item " + std::to_string(i) + ")";
  return "";
}

// Runs one case directory; "" when every data set passes.
std::string run_case(const fs::path& dir) {
  try {
    onnx::Model m = onnx::load((dir / "model.onnx").string());
    auto type_of = [](const std::vector<onnx::ValueInfo>& vs, size_t k) {
      return k < vs.size() ? vs[k].type : onnx::ValueInfo::Type::Tensor;
    };
    for (const auto& set : sorted_files(dir, "test_data_set_")) {
      std::vector<onnx::Value> ins, want;
      for (const auto& f : sorted_files(set, "input_"))
        ins.push_back(onnx::load_value(f.string(), type_of(m.inputs(), ins.size())));
      for (const auto& f : sorted_files(set, "output_"))
        want.push_back(onnx::load_value(f.string(), type_of(m.outputs(), want.size())));
      std::vector<onnx::Value> got = m.run_values(ins);
      if (got.size() != want.size())
        return std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size());
      for (size_t k = 0; k < want.size(); ++k)
        if (auto why = compare_value(got[k], want[k], k); !why.empty()) return why;
    }
    return "";
  } catch (const std::exception& e) {
    return first_line(e.what());
  }
}

std::map<std::string, std::string> read_expected(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto sp = line.find(' ');
    out[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(sp + 1);
  }
  return out;
}

}  // namespace

TEST(OnnxNode, OfficialCases) {
  const fs::path root = EMBER_ONNX_NODE_DATA;
  if (!fs::is_directory(root)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const char* only = std::getenv("EMBER_ONNX_CASE");
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && (!only || e.path().filename().string().find(only) != std::string::npos))
      cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());

  std::map<std::string, std::string> failures;
  struct Row { int pass = 0, total = 0; };
  std::map<std::string, Row> by_op;
  for (const auto& dir : cases) {
    std::string name = dir.filename().string();
    std::string why = run_case(dir);
    if (!why.empty()) failures[name] = why;
    std::vector<std::string> types;
    try {
      types = onnx::list_op_types((dir / "model.onnx").string());
    } catch (const Error&) {
      types = {"(unreadable)"};
    }
    for (const auto& t : types) {
      by_op[t].total++;
      by_op[t].pass += why.empty();
    }
  }
  const size_t passed = cases.size() - failures.size();
  std::printf("ONNX node cases: %zu of %zu pass (%.1f%%)\n", passed, cases.size(),
              cases.empty() ? 0.0 : 100.0 * double(passed) / double(cases.size()));

  if (const char* table = std::getenv("EMBER_ONNX_TABLE")) {
    std::ofstream f(table);
    f << "| op type | cases passing |\n|---|---|\n";
    for (const auto& [op, r] : by_op) f << "| " << op << " | " << r.pass << " / " << r.total << " |\n";
  }
  if (std::getenv("EMBER_ONNX_UPDATE") && !only) {
    std::ofstream f(EMBER_ONNX_EXPECTED);
    f << "# ONNX node cases (libonnx-testdata 1.12) that ember does not pass, with the reason.\n"
         "# tests/onnx/node_test.cpp checks this list both ways; EMBER_ONNX_UPDATE=1 rewrites it.\n";
    for (const auto& [name, why] : failures) f << name << " " << why << "\n";
    return;
  }
  auto expected = read_expected(EMBER_ONNX_EXPECTED);
  for (const auto& [name, why] : failures)
    EXPECT_TRUE(expected.count(name)) << name << " fails and is not listed: " << why;
  for (const auto& dir : cases) {
    std::string name = dir.filename().string();
    if (expected.count(name) && !failures.count(name))
      ADD_FAILURE() << name << " passes now: remove it from expected_failures.txt";
  }
}

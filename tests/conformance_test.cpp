// The conformance harness: every registered op must have golden cases (or be listed, with a
// reason, in tests/data/pending_ops.txt), and every case runs on every built backend.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include "ember/backends/backend.h"
#include "ember/ops/registry.h"
#include "golden.h"

namespace ember::test {
namespace {

std::set<std::string> pending_ops() {
  std::set<std::string> s;
  std::ifstream in(std::string(EMBER_TEST_DATA) + "/pending_ops.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    s.insert(line.substr(0, line.find(' ')));
  }
  return s;
}

TEST(Conformance, EveryRegisteredOpHasGoldenCases) {
  std::set<std::string> with_cases;
  for (const Case& c : all_cases()) with_cases.insert(c.op);
  auto pending = pending_ops();
  std::string missing, stale;
  for (int i = 0; i < kNumOps; ++i) {
    std::string name = op_name(OpId(i));
    bool has = with_cases.count(name) && runners().count(name);
    if (!has && !pending.count(name)) missing += " " + name;
    if (has && pending.count(name)) stale += " " + name;
  }
  EXPECT_EQ(missing, "") << "ops with no golden case or runner:" << missing;
  EXPECT_EQ(stale, "") << "ops listed as pending that now have cases (remove them):" << stale;
}

TEST(Conformance, EveryCoveredOpRunsOnEveryBuiltBackend) {
  detail::init();
  auto pending = pending_ops();
  for (int i = 0; i < kNumOps; ++i) {
    const OpDef& d = op_def(OpId(i));
    if (pending.count(d.name)) continue;
    EXPECT_NE(d.infer, nullptr) << d.name << " has no inference rule";
    for (int b = 0; b < kNumBackends; ++b) {
      BackendImpl* be = backend_for(Backend(b));
      if (!be) continue;
      EXPECT_TRUE(be->kernel(OpId(i)).fn || d.decompose)
          << d.name << " has neither a kernel nor a decomposition on " << backend_name(Backend(b));
    }
  }
}

TEST(Conformance, EveryCaseNamesARegisteredOpWithARunner) {
  for (const Case& c : all_cases()) {
    EXPECT_NO_THROW(op_from_name(c.op)) << c.file << ": " << c.name;
    EXPECT_TRUE(runners().count(c.op)) << "no runner for op " << c.op << " (" << c.file << ")";
  }
}

std::string check_stats(const Tensor& got, const json& want) {
  const json& st = want.at("stats");
  DType wd = dtype_from_name(want.at("dtype").get<std::string>());
  if (got.dtype() != wd) return "dtype " + std::string(dtype_name(got.dtype()));
  Shape ws = want.at("shape").get<std::vector<int64_t>>();
  if (got.shape() != ws) return "shape " + shape_str(got.shape());
  auto v = got.to_vector<double>();
  double m = 0, s2 = 0, lo = INFINITY, hi = -INFINITY;
  for (double x : v) { m += x; lo = std::min(lo, x); hi = std::max(hi, x); }
  m /= double(v.size());
  for (double x : v) s2 += (x - m) * (x - m);
  double sd = std::sqrt(s2 / double(v.size()));
  double tol = st.value("tol", 0.05);
  if (st.contains("mean") && std::fabs(m - st["mean"].get<double>()) > tol) return "mean " + std::to_string(m);
  if (st.contains("std") && std::fabs(sd - st["std"].get<double>()) > tol) return "std " + std::to_string(sd);
  if (st.contains("min") && lo < st["min"].get<double>()) return "min " + std::to_string(lo);
  if (st.contains("max") && hi > st["max"].get<double>()) return "max " + std::to_string(hi);
  return "";
}

class GoldenCase : public ::testing::TestWithParam<std::tuple<size_t, int>> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GoldenCase);

TEST_P(GoldenCase, MatchesPyTorch) {
  const Case& c = all_cases()[std::get<0>(GetParam())];
  Device dev = std::get<1>(GetParam()) == 0 ? Device::flex() : Device::cpu();
  auto it = runners().find(c.op);
  if (it == runners().end()) GTEST_SKIP() << "no runner for " << c.op;
  SCOPED_TRACE(c.file + ": " + c.name);
  if (!c.error.empty()) {
    try {
      it->second(c, dev);
      FAIL() << "expected " << c.error << ", nothing was thrown";
    } catch (const Error& e) {
      std::string what = e.what();
      std::string kind = dynamic_cast<const ShapeError*>(&e) ? "ShapeError"
                         : dynamic_cast<const DTypeError*>(&e) ? "DTypeError"
                         : dynamic_cast<const IndexError*>(&e) ? "IndexError"
                         : dynamic_cast<const ValueError*>(&e) ? "ValueError"
                         : dynamic_cast<const DeviceError*>(&e) ? "DeviceError"
                         : dynamic_cast<const NotImplementedError*>(&e) ? "NotImplementedError"
                                                                        : "Error";
      EXPECT_EQ(kind, c.error) << what;
      EXPECT_NE(what.find("[" + c.op + "]"), std::string::npos)
          << "the message should name the op: " << what;
    }
    return;
  }
  TensorList got = it->second(c, dev);
  ASSERT_EQ(got.size(), c.outputs.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const json& w = c.outputs[i];
    if (w.is_null()) continue;  // an output the case does not check (e.g. tie-dependent indices)
    std::string err = w.contains("stats") ? check_stats(got[i], w) : compare(got[i], w, c.rtol, c.atol);
    EXPECT_EQ(err, "") << "output " << i;
    if (!w.contains("stats")) EXPECT_EQ(got[i].device().backend(), dev.backend());
  }
}

std::vector<std::tuple<size_t, int>> params() {
  std::vector<std::tuple<size_t, int>> p;
  for (size_t i = 0; i < all_cases().size(); ++i)
    for (int b = 0; b < 2; ++b) p.emplace_back(i, b);
  return p;
}

INSTANTIATE_TEST_SUITE_P(
    Golden, GoldenCase, ::testing::ValuesIn(params()),
    [](const ::testing::TestParamInfo<std::tuple<size_t, int>>& info) {
      const Case& c = all_cases()[std::get<0>(info.param)];
      std::string n = c.name + "_" + std::to_string(std::get<0>(info.param)) +
                      (std::get<1>(info.param) == 0 ? "_flex" : "_cpu");
      for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

}  // namespace
}  // namespace ember::test

// The conformance harness: every registered op must have golden cases (or be listed, with a
// reason, in tests/data/pending_ops.txt), and every case runs on every device golden_devices()
// lists: every built backend, and the eager form of each lazy one.
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
      // A device backend (cuda) runs the ops it has no kernel for through the host fallback.
      const bool fallback = !be->is_host() && backend_for(Backend::Flex)->kernel(OpId(i)).fn;
      EXPECT_TRUE(be->kernel(OpId(i)).fn || d.decompose || fallback)
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

// A golden output recorded as null has no reference value (tie-dependent indices, an output the
// op does not produce for the case); it is checked by what it must satisfy instead: absent when
// the runner returns no tensor, else consistent with the op's other outputs.
std::string check_null_output(const Case& c, size_t i, const TensorList& got) {
  if (!got[i].defined()) return "";
  if ((c.op == "topk" || c.op == "kthvalue" || c.op == "median") && i == 1) {
    // Indices: the input read at them is the values output (in any order for unsorted topk).
    Tensor x = inputs_of(c, Device::flex())[0];
    Tensor idx = got[1].to(Device::flex()), vals = got[0].to(Device::flex());
    if (x.dim() == 0) return idx.item<int64_t>() == 0 ? "" : "index of a 0-d input is not 0";
    int64_t dim = c.attrs.contains("dim") && !c.attrs["dim"].is_null()
                      ? wrap_dim(c.attrs["dim"].get<int64_t>(), x.dim(), "test")
                      : x.dim() - 1;
    if (c.op != "topk" && !c.attrs.value("keepdim", false)) {
      idx = idx.unsqueeze(dim);
      vals = vals.unsqueeze(dim);
    }
    if (idx.dtype() != DType::I64) return "indices of dtype " + std::string(dtype_name(idx.dtype()));
    if (idx.numel() && (any(lt(idx, 0)).item<bool>() || any(ge(idx, x.size(dim))).item<bool>()))
      return "an index is out of range";
    Tensor read = gather(x, dim, idx);
    Tensor a = std::get<0>(sort(read.to(DType::F64), dim)), b = std::get<0>(sort(vals.to(DType::F64), dim));
    return equal(isnan(a), isnan(b)) && equal(where(isnan(a), 0.0, a), where(isnan(b), 0.0, b))
               ? ""
               : "the input at the returned indices is not the returned values";
  }
  return "output " + std::to_string(i) + " is null in the golden file and the harness has no "
         "check for it (add one to check_null_output)";
}

// Complex tensors run on the host devices only (docs/tensors.md): on any other device a complex
// case is an expected NotImplementedError that names the op.
bool involves_complex(const Case& c) {
  const std::string text = c.inputs.dump() + c.outputs.dump() + c.attrs.dump();
  return text.find("complex64") != std::string::npos ||
         text.find("complex128") != std::string::npos || text.find("\"imag\"") != std::string::npos;
}

class GoldenCase : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GoldenCase);

TEST_P(GoldenCase, MatchesPyTorch) {
  const Case& c = all_cases()[std::get<0>(GetParam())];
  const Device dev = golden_devices()[std::get<1>(GetParam())].device;
  auto it = runners().find(c.op);
  if (it == runners().end()) GTEST_SKIP() << "no runner for " << c.op;
  SCOPED_TRACE(c.file + ": " + c.name + " on " + dev.str());
  // Off the host, a complex case is refused naming the host devices; a pure view
  // (view_as_complex of a real tensor) may run, but its result cannot be read there: skipped.
  const bool host = dev.backend() == Backend::Flex || dev.backend() == Backend::Cpu;
  if (!host && c.error.empty() && involves_complex(c)) {
    try {
      it->second(c, dev);
      synchronize(dev);
    } catch (const NotImplementedError& e) {
      EXPECT_NE(std::string(e.what()).find("host devices"), std::string::npos) << e.what();
      return;
    }
    GTEST_SKIP() << "a complex view on " << dev.str() << " (complex runs on the host devices)";
  }
  if (!c.error.empty()) {
    try {
      it->second(c, dev);
      synchronize(dev);  // an error a lazy device finds when its queue runs is thrown here
      FAIL() << "expected " << c.error << ", nothing was thrown";
    } catch (const Error& e) {
      std::string what = e.what();
      const std::string kind = error_kind(e);
      // Off the host, an op with complex operands is refused before it checks shapes or values.
      if (!host && involves_complex(c) && kind == "NotImplementedError" &&
          what.find("host devices") != std::string::npos)
        return;
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
    if (w.is_null()) {
      EXPECT_EQ(check_null_output(c, i, got), "") << "output " << i;
      continue;
    }
    std::string err = w.contains("stats") ? check_stats(got[i], w) : compare(got[i], w, c.rtol, c.atol);
    EXPECT_EQ(err, "") << "output " << i;
    if (!w.contains("stats")) EXPECT_EQ(got[i].device().backend(), dev.backend());
  }
}

std::vector<std::tuple<size_t, size_t>> params() {
  std::vector<std::tuple<size_t, size_t>> p;
  for (size_t i = 0; i < all_cases().size(); ++i)
    for (size_t d = 0; d < golden_devices().size(); ++d) p.emplace_back(i, d);
  return p;
}

INSTANTIATE_TEST_SUITE_P(
    Golden, GoldenCase, ::testing::ValuesIn(params()),
    [](const ::testing::TestParamInfo<std::tuple<size_t, size_t>>& info) {
      const Case& c = all_cases()[std::get<0>(info.param)];
      std::string n = c.name + "_" + std::to_string(std::get<0>(info.param)) + "_" +
                      golden_devices()[std::get<1>(info.param)].name;
      for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

}  // namespace
}  // namespace ember::test

// VJP rules across the registry: every differentiable op has a rule (or a decomposition the tape
// can record through), and every golden case of a differentiable op passes a finite-difference
// check of its rule in f64 (the case's attrs and inputs, captured from its runner).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "ember/autodiff/rules.h"
#include "ember/backends/backend.h"
#include "golden.h"
#include "gradcheck.h"

namespace ember::test {
namespace {

std::set<std::string> read_list(const char* file) {
  std::set<std::string> s;
  std::ifstream in(std::string(EMBER_TEST_DATA) + "/" + file);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') s.insert(line.substr(0, line.find(' ')));
  return s;
}

bool needs_rule(const OpDef& d) {
  return d.differentiable && d.category != OpCategory::Creation && d.category != OpCategory::Random;
}

TEST(VjpRules, EveryDifferentiableOpHasARuleOrADecomposition) {
  detail::init();
  auto pending = read_list("pending_vjp.txt");
  std::string missing, stale;
  for (int i = 0; i < kNumOps; ++i) {
    const OpDef& d = op_def(OpId(i));
    if (!needs_rule(d)) continue;
    bool ok = d.vjp || d.decompose;
    if (!ok && !pending.count(d.name)) missing += std::string(" ") + d.name;
    if (ok && pending.count(d.name)) stale += std::string(" ") + d.name;
  }
  EXPECT_EQ(missing, "") << "differentiable ops with no VJP rule and no decomposition:" << missing;
  EXPECT_EQ(stale, "") << "listed in pending_vjp.txt but now covered:" << stale;
}

TEST(VjpRules, SumToUndoesBroadcasting) {
  Tensor g = ones({2, 3, 4});
  EXPECT_EQ(autodiff::sum_to(g, {3, 1}).to_vector<float>(), (std::vector<float>{8, 8, 8}));
  EXPECT_EQ(autodiff::sum_to(g, {}).item<float>(), 24.f);
  EXPECT_EQ(autodiff::sum_to(g, {2, 3, 4}).shape(), Shape({2, 3, 4}));
}

class RuleCase : public ::testing::TestWithParam<size_t> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RuleCase);

TEST_P(RuleCase, MatchesFiniteDifferences) {
  const Case& c = all_cases()[GetParam()];
  OpId op = op_from_name(c.op);
  const OpDef& d = op_def(op);
  if (!d.vjp) GTEST_SKIP() << c.op << " has no rule (it differentiates through its decomposition)";
  static const auto skip = read_list("gradcheck_skip.txt");
  if (skip.count(c.name)) GTEST_SKIP() << "listed in gradcheck_skip.txt";
  auto it = runners().find(c.op);
  ASSERT_NE(it, runners().end());
  CapturedCall call = capture_op(op, [&](Device dev) { it->second(c, dev); });
  ASSERT_TRUE(call.captured) << "the runner never called " << c.op;
  bool any_float = false;
  for (Tensor& t : call.inputs)
    if (t.defined() && is_floating(t.dtype())) {
      t = t.to(DType::F64);
      any_float = true;
    }
  if (!any_float) GTEST_SKIP() << "no floating input";
  if (std::string why = nothing_to_check(op, call.attrs, call.inputs); !why.empty())
    GTEST_SKIP() << why;
  SCOPED_TRACE(c.file + ": " + c.name);
  EXPECT_EQ(gradcheck(op, call.attrs, call.inputs), "");
}

std::vector<size_t> rule_cases() {
  detail::init();
  std::vector<size_t> v;
  for (size_t i = 0; i < all_cases().size(); ++i) {
    const Case& c = all_cases()[i];
    if (!c.error.empty()) continue;
    bool stats = false;
    for (const auto& o : c.outputs) stats = stats || (o.is_object() && o.contains("stats"));
    if (stats) continue;
    const OpDef& d = op_def(op_from_name(c.op));
    if (needs_rule(d)) v.push_back(i);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Golden, RuleCase, ::testing::ValuesIn(rule_cases()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string n = all_cases()[info.param].name + "_" + std::to_string(info.param);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace ember::test

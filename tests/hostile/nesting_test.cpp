// Depth and length are bounded wherever a file's contents meet something recursive: JSON nested
// 100,000 deep is refused while it is parsed (so no dump(), copy or comparison ever recurses
// through it), std::regex never sees a name longer than 1024 bytes, and messages quote a
// hostile value in a few dozen characters.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ember/ember.h"
#include "ember/store/load.h"
#include "ember/store/safetensors.h"
#include "ember/train/metric_log.h"
#include "hostile/expect_error.h"
#include "hostile/files_util.h"
#include "hostile/learner_util.h"
#include "store/store_test_util.h"

using namespace ember;

namespace {
store::SafetensorsFile open_st(const std::string& header, const std::string& data = "") {
  return store::SafetensorsFile::from_bytes(test::st_file(header, data), "x.safetensors");
}
}  // namespace

TEST(HostileNesting, SafetensorsHeadersNestThreeLevels) {
  EXPECT_ERROR(open_st(R"({"a":{"dtype":"F32","shape":)" + test::nested(80000) +
                       R"(,"data_offsets":[0,0]}})"),
               store::FormatError, "store");
  EXPECT_ERROR(open_st(R"({"__metadata__":{"k":)" + test::nested(80000) + "}}"), store::FormatError,
               "store");
  EXPECT_ERROR(open_st(R"({"a":)" + test::nested(3) + "}"), store::FormatError, "store");
  EXPECT_ERROR(open_st(R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", "abcd"),
               store::FormatError, "store");
  EXPECT_EQ(open_st(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcd").keys(),
            std::vector<std::string>{"a"});
}

TEST(HostileNesting, MessagesQuoteHostileValuesBriefly) {
  std::string name(200000, 'k');
  try {
    open_st(R"({")" + name + R"(":{"dtype":"F99","shape":[1],"data_offsets":[0,4]}})", "abcd");
    ADD_FAILURE() << "no error";
  } catch (const store::FormatError& e) {
    EXPECT_LT(std::string(e.what()).size(), 600u);
  }
  try {
    open_st(R"({"a":{"dtype":"F32","shape":[)" + std::string(100000, '1') + "]}}");
    ADD_FAILURE() << "no error";
  } catch (const store::FormatError& e) {
    EXPECT_LT(std::string(e.what()).size(), 600u);
  }
}

TEST(HostileNesting, RenameRulesRefuseHugeNames) {
  test::ScratchDir dir;
  std::string p = dir.file("x.safetensors");
  // A 200 KB name loads, but rename and filter rules (std::regex recurses per character) refuse
  // it instead of overflowing the stack.
  std::string name(200000, 'k');
  store::save_safetensors(p, {{name, ones({2})}});
  store::SafetensorsFile f(p);
  EXPECT_EQ(f.keys().front(), name);
  Tensor t = zeros({2});
  EXPECT_ERROR(store::load_into({{"w", t}}, f, {.rename = {{"^k+$", "w"}}}), ValueError, "store");
  EXPECT_ERROR(store::load_into({{"w", t}}, f, {.include = {"w"}}), ValueError, "store");
  EXPECT_ERROR(store::load_into({{"w", t}}, f, {.exclude = {"w"}, .allow_unexpected = true}),
               ValueError, "store");
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_NO_THROW(store::load_into({{name, t}}, f));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 1}));
  // A rule that grows a name past the bound is refused too.
  store::save_safetensors(p, {{"a", ones({2})}});
  EXPECT_ERROR(store::load_into({{"w", t}}, p, {.rename = {{"a", std::string(2000, 'b')}}}),
               ValueError, "store");
  // 1024 bytes are fine.
  std::string k1024(1024, 'x');
  store::save_safetensors(p, {{k1024, ones({2})}});
  EXPECT_NO_THROW(store::load_into({{"w", t}}, p, {.rename = {{"^x+$", "w"}}}));
}

TEST(HostileNesting, RulePatternsAreBoundedAndMatchInLinearTime) {
  test::ScratchDir dir;
  std::string p = dir.file("x.safetensors");
  store::save_safetensors(p, {{"a.weight", ones({2})}});
  Tensor t = zeros({2});
  // Counts that overflowed libstdc++'s regex compiler (found by fuzz_safetensors_load) are RE2
  // literals, and groups nested 2000 deep compile without recursing: neither matches here.
  for (std::string odd : {std::string("a{6666666666666666666}"), std::string("a{2,6666666666666}"),
                          std::string(2000, '(') + "a" + std::string(2000, ')')}) {
    EXPECT_NO_THROW(store::load_into(
        {{"w", t}}, p, {.include = {odd}, .allow_partial = true, .allow_unexpected = true}));
  }
  // Repetitions that would build millions of states, over-long patterns, back-references and
  // malformed patterns are refused before any match.
  for (std::string bad : {std::string("(a{1000}){1000}"), std::string("((a{100}){100}){100}"),
                          std::string(5000, 'a'), std::string("(a"), std::string("a\\1")}) {
    EXPECT_ERROR(store::load_into({{"w", t}}, p, {.rename = {{bad, "w"}}}), ValueError, "store");
    EXPECT_ERROR(store::load_into({{"w", t}}, p, {.include = {bad}}), ValueError, "store");
    EXPECT_ERROR(store::load_into({{"w", t}}, p, {.exclude = {bad}, .allow_unexpected = true}),
                 ValueError, "store");
  }
  // Replacements name groups the pattern has.
  EXPECT_ERROR(store::load_into({{"w", t}}, p, {.rename = {{"^(a)\\.weight$", "$2"}}}), ValueError,
               "store");
  EXPECT_ERROR(store::load_into({{"w", t}}, p, {.rename = {{"^(a)", "$`"}}}), ValueError, "store");
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 0}));
  // Patterns that backtrack exponentially in std::regex (found by fuzz_safetensors_load: it
  // timed out) match a 1024-byte key at once.
  std::string key(1024, 'a');
  store::save_safetensors(p, {{key, ones({2})}});
  EXPECT_NO_THROW(store::load_into({{"w", t}}, p, {.include = {"(a*)*(a*)*(a|aa)*b"}}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_NO_THROW(store::load_into({{"w", t}}, p, {.rename = {{"^(a*)*(a|aa)*$", "w"}}}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 1}));
  // Ordinary rules, groups, $& and $$, counts up to the bound and classes with braces work.
  store::save_safetensors(p, {{"a.weight", full({2}, 2.0)}});
  EXPECT_NO_THROW(store::load_into({{"w", t}}, p, {.rename = {{"^a\\.(w)[a-z]{1,1000}$", "$1"}}}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{2, 2}));
  Tensor u = zeros({2});
  EXPECT_NO_THROW(
      store::load_into({{"x$a.weight", u}}, p, {.rename = {{"^[{}]?a[.](?:weight)$", "x$$$&"}}}));
  EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(HostileNesting, MetricLogsAndHistoriesAreBounded) {
  EXPECT_ERROR(train::history_from_json(test::nested(100000)), ValueError, "metric_log");
  EXPECT_ERROR(train::history_from_json(R"([{"epoch":0,"seconds":1,"train":{"loss":[[[1]]]}}])"),
               ValueError, "metric_log");
  test::ScratchDir dir;
  std::string log = dir.file("log.jsonl");
  test::write_bytes(log, "{\"epoch\": 0, \"x\": " + test::nested(100000) + "}\n");
  EXPECT_ERROR(train::read_metric_log(log), ValueError, "metric_log");
  test::write_bytes(log, "{\"epoch\": 0, \"x\": [" + std::string(100000, '7') + "]}\n");
  try {
    train::read_metric_log(log);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_LT(std::string(e.what()).size(), 600u);
  }
}

TEST(HostileNesting, CheckpointMetadataIsBounded) {
  test::TinyRun first;
  std::string ck = first.checkpoint();
  ASSERT_FALSE(ck.empty());
  test::TinyRun other;
  std::string bad = other.dir.file("bad.safetensors");
  Tensor before = other.net.state_dict()[0].second.clone();
  using J = nlohmann::json;
  auto refuse = [&](auto edit) {
    test::rewrite_checkpoint(ck, bad, edit);
    EXPECT_ERROR(other.learner->load_checkpoint(bad), store::FormatError, "Learner");
    EXPECT_TRUE(equal(other.net.state_dict()[0].second, before));
  };
  refuse([](J& j, store::Metadata& md) {
    md["ember.learner"] = test::nested(100000);
    j = nullptr;
  });
  refuse([](J&, store::Metadata& md) { md["ember.history"] = test::nested(100000); });
  refuse([](J& j, store::Metadata&) { j["train_metrics"] = J::parse(test::nested(5)); });
  refuse([](J& j, store::Metadata& md) {
    md["ember.learner"] = "{not json";
    j = nullptr;
  });
  refuse([](J&, store::Metadata& md) { md.erase("ember.history"); });
  refuse([](J& j, store::Metadata& md) {
    md.erase("ember.learner");
    j = nullptr;
  });
  EXPECT_NO_THROW(other.learner->load_checkpoint(ck));
  // A checkpoint file name longer than any ember writes is not a checkpoint.
  std::string long_name = "epoch-" + std::string(200, '0') + "1.safetensors";
  std::filesystem::copy_file(ck, first.dir.file(long_name));
  EXPECT_EQ(train::Learner::latest_checkpoint(first.dir.path.string()), ck);
}

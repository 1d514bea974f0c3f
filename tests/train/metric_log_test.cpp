// ember/train/metric_log: CSV and JSON-lines logs, the checkpoint JSON, exact doubles, errors.
#include "ember/train/metric_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "ember/error.h"
#include "ember/store/safetensors.h"
#include "store/store_test_util.h"

namespace ember::train {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Values that a decimal round trip with too few digits would change.
std::vector<EpochRecord> sample_history() {
  return {
      {.epoch = 1,
       .seconds = 12.345678901234567,
       .train = {{"loss", 0.1 + 0.2}, {"accuracy", 1.0 / 3.0}, {"lr", 1e-3}},
       .valid = {{"loss", 2.2250738585072014e-308}, {"accuracy", 0.8}}},
      // A different metric set: no lr, a new f1, and no validation.
      {.epoch = 2, .seconds = 7, .train = {{"loss", kNaN}, {"f1", 5e-324}, {"accuracy", 0.5}}},
      {.epoch = 3,
       .seconds = 1e300,
       .train = {{"loss", -0.0}, {"accuracy", 0.75}, {"lr", 123456789.125}},
       .valid = {{"f1", 0.6180339887498949}, {"loss", 3.0}}},
  };
}

// Same epochs and values, bit for bit (NaN equal to NaN); `same_order` also checks metric order.
void expect_same(const std::vector<EpochRecord>& got, const std::vector<EpochRecord>& want) {
  ASSERT_EQ(got.size(), want.size());
  auto same = [](double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
  };
  auto check = [&](const MetricValues& g, const MetricValues& w, size_t e) {
    ASSERT_EQ(g.size(), w.size()) << "epoch " << e;
    for (const auto& entry : w) {
      // clang 14 cannot capture a structured binding, hence entry's parts by name.
      const auto& name = entry.first;
      const auto& v = entry.second;
      auto it = std::find_if(g.begin(), g.end(), [&](const auto& p) { return p.first == name; });
      ASSERT_NE(it, g.end()) << name;
      EXPECT_TRUE(same(it->second, v)) << name << ": " << it->second << " vs " << v;
    }
  };
  for (size_t e = 0; e < want.size(); ++e) {
    EXPECT_EQ(got[e].epoch, want[e].epoch);
    EXPECT_TRUE(same(got[e].seconds, want[e].seconds));
    check(got[e].train, want[e].train, e);
    check(got[e].valid, want[e].valid, e);
  }
}

std::vector<std::string> names(const MetricValues& m) {
  std::vector<std::string> n;
  for (const auto& [k, v] : m) n.push_back(k);
  return n;
}

TEST(TrainMetricLog, FormatByExtension) {
  EXPECT_EQ(log_format_for("runs/a.csv"), LogFormat::csv);
  EXPECT_EQ(log_format_for("a.CSV"), LogFormat::csv);
  EXPECT_EQ(log_format_for("a.jsonl"), LogFormat::jsonl);
  EXPECT_EQ(log_format_for("a.json"), LogFormat::jsonl);
  EXPECT_THROW(log_format_for("a.txt"), ValueError);
  EXPECT_THROW(log_format_for("csv"), ValueError);
  test::ScratchDir dir;
  EXPECT_THROW(write_metric_log(dir.file("log.tsv"), sample_history()), ValueError);
  EXPECT_FALSE(fs::exists(dir.file("log.tsv")));
}

TEST(TrainMetricLog, CsvColumnsAndRoundTrip) {
  test::ScratchDir dir;
  std::string p = dir.file("log.csv");
  auto h = sample_history();
  write_metric_log(p, h);
  std::string text = test::read_bytes(p);
  // Columns: the union in first-seen order, train then valid; NaN as "nan", gaps empty.
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "epoch,seconds,train.loss,train.accuracy,train.lr,train.f1,valid.loss,"
            "valid.accuracy,valid.f1");
  EXPECT_NE(text.find("\n2,7,nan,0.5,,5e-324,,,\n"), std::string::npos) << text;
  auto back = read_metric_log(p);
  expect_same(back, h);
  // The read-back order follows the columns.
  EXPECT_EQ(names(back[2].valid), (std::vector<std::string>{"loss", "f1"}));
}

TEST(TrainMetricLog, JsonLinesRoundTripKeepsOrder) {
  test::ScratchDir dir;
  for (const char* name : {"log.jsonl", "log.json"}) {
    std::string p = dir.file(name);
    auto h = sample_history();
    write_metric_log(p, h);
    std::string text = test::read_bytes(p);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
    EXPECT_NE(text.find("\"train.loss\":null"), std::string::npos) << text;
    auto back = read_metric_log(p);
    expect_same(back, h);
    for (size_t e = 0; e < h.size(); ++e) {
      EXPECT_EQ(names(back[e].train), names(h[e].train));
      EXPECT_EQ(names(back[e].valid), names(h[e].valid));
    }
  }
}

TEST(TrainMetricLog, Infinities) {
  test::ScratchDir dir;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<EpochRecord> h{{.epoch = 1, .seconds = 1, .train = {{"loss", inf}, {"g", -inf}}}};
  write_metric_log(dir.file("i.csv"), h);
  expect_same(read_metric_log(dir.file("i.csv")), h);
  // JSON has no infinity: null, read back as NaN.
  write_metric_log(dir.file("i.jsonl"), h);
  auto back = read_metric_log(dir.file("i.jsonl"));
  ASSERT_EQ(back.at(0).train.size(), 2u);
  EXPECT_TRUE(std::isnan(back[0].train[0].second) && std::isnan(back[0].train[1].second));
}

TEST(TrainMetricLog, HistoryJsonExact) {
  auto h = sample_history();
  auto back = history_from_json(history_to_json(h));
  expect_same(back, h);
  for (size_t e = 0; e < h.size(); ++e) EXPECT_EQ(names(back[e].train), names(h[e].train));
  EXPECT_TRUE(history_from_json("[]").empty());
  EXPECT_EQ(history_to_json({}), "[]");
  EXPECT_THROW(history_from_json("{"), ValueError);
  EXPECT_THROW(history_from_json("{}"), ValueError);
  EXPECT_THROW(history_from_json(R"([{"epoch": 1.5, "seconds": 1}])"), ValueError);
  EXPECT_THROW(history_from_json(R"([{"epoch": 1, "seconds": 1, "train": {"loss": "x"}}])"),
               ValueError);
}

TEST(TrainMetricLog, EmptyHistory) {
  test::ScratchDir dir;
  for (const char* name : {"e.csv", "e.jsonl"}) {
    write_metric_log(dir.file(name), {});
    EXPECT_TRUE(read_metric_log(dir.file(name)).empty());
  }
  EXPECT_EQ(test::read_bytes(dir.file("e.csv")), "epoch,seconds\n");
}

// Reading `text` as `name` throws ValueError naming the file and `line`.
void expect_malformed(const test::ScratchDir& dir, const std::string& name,
                      const std::string& text, int line) {
  std::string p = dir.file(name);
  test::write_bytes(p, text);
  try {
    read_metric_log(p);
    ADD_FAILURE() << "no error for " << text;
  } catch (const ValueError& e) {
    std::string want = p + ":" + std::to_string(line) + ":";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[metric_log]"), std::string::npos) << e.what();
  }
}

TEST(TrainMetricLog, MalformedFilesNameFileAndLine) {
  test::ScratchDir dir;
  expect_malformed(dir, "a.csv", "epoch,time\n1,2\n", 1);
  expect_malformed(dir, "b.csv", "epoch,seconds,loss\n1,2,3\n", 1);
  expect_malformed(dir, "c.csv", "epoch,seconds,train.loss\n1,2,3\n2,3\n", 3);
  expect_malformed(dir, "d.csv", "epoch,seconds,train.loss\n1,2,0.5x\n", 2);
  expect_malformed(dir, "e.csv", "epoch,seconds\n1.5,2\n", 2);
  expect_malformed(dir, "f.jsonl", "{\"epoch\":1,\"seconds\":2}\n{\"epoch\":2,\n", 2);
  expect_malformed(dir, "g.jsonl", "[1, 2]\n", 1);
  expect_malformed(dir, "h.jsonl", "{\"seconds\":2}\n", 1);
  expect_malformed(dir, "i.jsonl", "{\"epoch\":1,\"seconds\":2,\"loss\":3}\n", 1);
  expect_malformed(dir, "j.jsonl", "{\"epoch\":1,\"train.loss\":\"x\"}\n", 1);
  EXPECT_THROW(read_metric_log(dir.file("missing.csv")), store::IOError);
}

TEST(TrainMetricLog, QuotedNamesAndCrLf) {
  test::ScratchDir dir;
  std::string p = dir.file("q.csv");
  std::vector<EpochRecord> h{{.epoch = 1, .seconds = 2, .train = {{"a,b\"c", 0.25}}}};
  write_metric_log(p, h);
  expect_same(read_metric_log(p), h);
  test::write_bytes(p, "epoch,seconds,train.loss\r\n1,2,0.5\r\n");
  auto back = read_metric_log(p);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].train, (MetricValues{{"loss", 0.5}}));
}

TEST(TrainMetricLog, FailedWriteKeepsTheOldFile) {
  test::ScratchDir dir;
  std::string p = dir.file("log.csv");
  write_metric_log(p, sample_history());
  const std::string before = test::read_bytes(p);
  EXPECT_THROW(write_metric_log(dir.file("no/such/dir/log.csv"), sample_history()),
               store::IOError);

  // An unwritable directory (root ignores permissions, so only when they take effect).
  fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec);
  bool enforced = !std::ofstream(dir.file("probe"));
  if (enforced) {
    EXPECT_THROW(write_metric_log(p, {}), store::IOError);
  }
  fs::permissions(dir.path, fs::perms::owner_all);
  fs::remove(dir.file("probe"));
  EXPECT_EQ(test::read_bytes(p), before);

  // A write failing half way (a file-size limit makes write() fail with EFBIG).
  std::vector<EpochRecord> big(2000, sample_history()[0]);
  std::string err = test::io_error_with_file_size_limit(4096, [&] { write_metric_log(p, big); });
  EXPECT_NE(err.find(p), std::string::npos) << err;
  EXPECT_EQ(test::read_bytes(p), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace ember::train

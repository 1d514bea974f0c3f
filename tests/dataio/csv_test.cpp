// CSV datasets (ember/data/csv.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/data/csv.h"
#include "ember/ember.h"

using namespace ember;
using namespace ember::data;

namespace {
const std::string kPoints = std::string(EMBER_TEST_DATA) + "/dataio/points.csv";

std::string write_temp(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() /
           ("ember_csv_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no ValueError)";
}
struct Point {
  float x, y;
  int64_t label;
};
Point parse_point(const std::vector<std::string>& f) {
  if (f.size() != 3) throw ValueError("expected 3 fields, found " + std::to_string(f.size()));
  return {parse_float(f[0]), parse_float(f[1]), parse_int(f[2])};
}
}  // namespace

TEST(DataCsv, ParsesRowsIntoUserItems) {
  CsvDataset<Point> d(kPoints, parse_point, {.header = true});
  ASSERT_EQ(d.size(), 3);  // the blank line is skipped
  EXPECT_FLOAT_EQ(d.get(1).x, 3.5f);
  EXPECT_FLOAT_EQ(d.get(1).y, -1.f);
  EXPECT_EQ(d.get(2).label, 1);
  EXPECT_FLOAT_EQ(d.get(2).x, 4.f);  // a quoted number
  EXPECT_FLOAT_EQ(d.get(2).y, 0.5f);
  EXPECT_THROW(d.get(3), IndexError);
}

TEST(DataCsv, RowsAsFloatTensors) {
  CsvTensorDataset d(kPoints, {.header = true});
  ASSERT_EQ(d.size(), 3);
  EXPECT_EQ(d.columns(), 3);
  Tensor r = d.get(1);
  EXPECT_EQ(r.dtype(), kF32);
  EXPECT_EQ(r.shape(), Shape({3}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3.5f, -1.f, 1.f}));
}

TEST(DataCsv, QuotesDelimitersAndCrlf) {
  auto p = write_temp("q.csv", "a;\"b;c\";\"say \"\"hi\"\"\"\r\n1;2;3\r\n");
  auto rows = read_csv(p, {.delimiter = ';'});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].fields, (std::vector<std::string>{"a", "b;c", "say \"hi\""}));
  EXPECT_EQ(rows[1].fields, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(rows[1].line, 2);
  std::filesystem::remove(p);
}

TEST(DataCsv, MalformedRowsNameFileAndLine) {
  auto p = write_temp("bad.csv", "1,2,0\n\n3,x,1\n");
  std::string m = message_of([&] { CsvDataset<Point>(p, parse_point); });
  EXPECT_NE(m.find("[CsvDataset] " + p + ":3:"), std::string::npos) << m;
  EXPECT_NE(m.find("expected a number, found 'x'"), std::string::npos) << m;

  m = message_of([&] { (void)CsvTensorDataset(p); });
  EXPECT_NE(m.find(p + ":3: field 2"), std::string::npos) << m;

  auto q = write_temp("ragged.csv", "1,2\n3,4\n5\n");
  m = message_of([&] { (void)CsvTensorDataset(q); });
  EXPECT_NE(m.find(q + ":3: expected 2 fields, found 1"), std::string::npos) << m;

  auto u = write_temp("quote.csv", "1,2\n\"3,4\n");
  m = message_of([&] { read_csv(u); });
  EXPECT_NE(m.find(u + ":2: unterminated quoted field"), std::string::npos) << m;

  m = message_of([&] { CsvDataset<Point>(q, parse_point); });
  EXPECT_NE(m.find(q + ":1: expected 3 fields, found 2"), std::string::npos) << m;

  m = message_of([] { read_csv("/nonexistent/dir/x.csv"); });
  EXPECT_NE(m.find("/nonexistent/dir/x.csv: cannot open"), std::string::npos) << m;
  for (auto& f : {p, q, u}) std::filesystem::remove(f);
}

TEST(DataCsv, NumberParsing) {
  EXPECT_FLOAT_EQ(parse_float(" 2.5 "), 2.5f);
  EXPECT_FLOAT_EQ(parse_float("-1e3"), -1000.f);
  EXPECT_THROW(parse_float(""), ValueError);
  EXPECT_THROW(parse_float("1.5abc"), ValueError);
  EXPECT_EQ(parse_int("-42"), -42);
  EXPECT_THROW(parse_int("4.2"), ValueError);
}

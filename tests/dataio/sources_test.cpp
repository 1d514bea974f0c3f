// The dataset sources of ember/data beyond CSV and IDX: SQLite tables, the sharded on-disk
// format (read while another process appends), text and JSON lines with a tokenizer hook,
// ImageFolder, and deterministic and stratified splits.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "ember/data/image_folder.h"
#include "ember/data/loader.h"
#include "ember/data/shards.h"
#include "ember/data/splits.h"
#include "ember/data/sqlite.h"
#include "ember/data/text.h"
#include "ember/ember.h"

using namespace ember;
using namespace ember::data;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("ember_sources_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

template <class E = ValueError>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

// ------------------------------------------------------------------ SQLite

TEST(DataSqlite, RowsRoundTripThroughWriteSqlite) {
  const std::string db = (temp_dir("sqlite") / "items.db").string();
  std::vector<Row> rows;
  for (int64_t i = 0; i < 5; ++i) {
    Tensor img = arange(i, i + 6, 1, {.dtype = DType::F32}).reshape({2, 3});
    rows.push_back({{"id", "name", "score", "image", "note"},
                    {i, "item " + std::to_string(i), 0.5 * double(i), img,
                     i % 2 ? SqlValue{} : SqlValue{std::string("even")}}});
  }
  write_sqlite(db, "items", rows);
  SqliteDataset ds(db, "items");
  ASSERT_EQ(ds.size(), 5);
  EXPECT_EQ(ds.columns(), (std::vector<std::string>{"id", "name", "score", "image", "note"}));
  const Row r = ds.get(3);
  EXPECT_EQ(std::get<int64_t>(r.at("id")), 3);
  EXPECT_EQ(std::get<std::string>(r.at("name")), "item 3");
  EXPECT_DOUBLE_EQ(std::get<double>(r.at("score")), 1.5);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(r.at("note")));
  EXPECT_TRUE(equal(r.tensor("image"), std::get<Tensor>(rows[3].values[3])));
  EXPECT_EQ(r.tensor("id").item<int64_t>(), 3);
  EXPECT_NE(message_of([&] { r.at("nope"); }).find("columns: id, name"), std::string::npos);
  EXPECT_NE(message_of([&] { r.tensor("name"); }).find("TEXT"), std::string::npos);
  // A subset of columns, a condition and an order.
  SqliteDataset odd(db, "items",
                    {.columns = {"id", "image"}, .where = "id % 2 = 1", .order_by = "id DESC"});
  ASSERT_EQ(odd.size(), 2);
  EXPECT_EQ(std::get<int64_t>(odd.get(0).at("id")), 3);
  EXPECT_EQ(odd.get(1).tensor("image").shape(), (Shape{2, 3}));
  EXPECT_THROW(ds.get(5), IndexError);
}

TEST(DataSqlite, ForeignBlobsReadAsBytesAndErrorsNameTheFile) {
  const std::string db = (temp_dir("sqlite2") / "raw.db").string();
  // A blob write_sqlite did not encode is its bytes; a uint8 tensor round-trips as itself.
  write_sqlite(db, "t", {{{"b"}, {tensor(std::vector<uint8_t>{1, 2, 3}, {3})}}});
  EXPECT_EQ(SqliteDataset(db, "t").get(0).tensor("b").to_vector<uint8_t>(),
            (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_NE(message_of([&] { SqliteDataset(db, "missing"); }).find("no table 'missing'"),
            std::string::npos);
  EXPECT_NE(message_of([&] { SqliteDataset("/nonexistent/x.db", "t"); }).find("/nonexistent/x.db"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              write_sqlite(db, "t", {{{"a"}, {int64_t(1)}}, {{"b"}, {int64_t(2)}}});
            }).find("row 1"),
            std::string::npos);
  // The failed write left the old database in place.
  EXPECT_EQ(SqliteDataset(db, "t").size(), 1);
}

TEST(DataSqlite, ConcurrentReadersGetTheirRows) {
  const std::string db = (temp_dir("sqlite3") / "n.db").string();
  std::vector<Row> rows;
  for (int64_t i = 0; i < 200; ++i) rows.push_back({{"i"}, {i}});
  write_sqlite(db, "n", rows);
  SqliteDataset ds(db, "n");
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int64_t i = t; i < 200; i += 4)
        if (std::get<int64_t>(ds.get(i).at("i")) != i) ++bad;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// ------------------------------------------------------------------ shards

Record record_of(int64_t i) {
  return {full({i % 5 + 1, 3}, double(i), {.dtype = DType::F32}), scalar_tensor(i, DType::I64),
          arange(0, i % 7, 1, {.dtype = DType::U8})};
}

void expect_record(const Record& r, int64_t i) {
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(equal(r[0], record_of(i)[0])) << i;
  EXPECT_EQ(r[1].item<int64_t>(), i);
  EXPECT_TRUE(equal(r[2], record_of(i)[2])) << i;
}

TEST(DataShards, WriteReadAppendAcrossShards) {
  const std::string dir = (temp_dir("shards") / "ds").string();
  {
    DatasetWriter w(dir, {.shard_bytes = 1024});
    for (int64_t i = 0; i < 40; ++i) w.write(record_of(i));
    EXPECT_EQ(w.size(), 40);
    EXPECT_NE(message_of([&] { DatasetWriter second(dir); }).find("another DatasetWriter"),
              std::string::npos);
  }
  EXPECT_GT(std::distance(fs::directory_iterator(dir), fs::directory_iterator()),
            5);  // many shards
  ShardedDataset ds(dir);
  ASSERT_EQ(ds.size(), 40);
  for (int64_t i = 0; i < 40; ++i) expect_record(ds.get(i), i);
  {
    DatasetWriter w(dir);  // reopened: appends after the 40
    EXPECT_EQ(w.size(), 40);
    w.write(Example{ones({2}), scalar_tensor(int64_t(7), DType::I64)});
  }
  EXPECT_EQ(ds.size(), 40);
  EXPECT_EQ(ds.refresh(), 41);
  auto ex = as_examples(std::make_shared<ShardedDataset>(dir));
  EXPECT_EQ(ex->get(40).second.item<int64_t>(), 7);
  EXPECT_THROW(ex->get(0), ValueError);  // three fields
  EXPECT_THROW(ds.get(41), IndexError);
}

TEST(DataShards, ReadableWhileAnotherProcessAppends) {
  const std::string dir = (temp_dir("shards_fork") / "ds").string();
  {
    DatasetWriter w(dir, {.shard_bytes = 4096});
    w.write(record_of(0));
  }
  ShardedDataset ds(dir);  // opened before the writer starts
  constexpr int64_t kTotal = 300;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int rc = 0;
    try {
      DatasetWriter w(dir, {.shard_bytes = 4096});
      for (int64_t i = 1; i < kTotal; ++i) {
        w.write(record_of(i));
        if (i % 10 == 0) ::usleep(2000);
      }
    } catch (...) {
      rc = 1;
    }
    ::_exit(rc);
  }
  int64_t seen = 0, polls = 0;
  std::set<int64_t> sizes;
  while (seen < kTotal && polls < 20000) {
    const int64_t n = ds.refresh();
    sizes.insert(n);
    for (int64_t i = seen; i < n; ++i) expect_record(ds.get(i), i);  // each visible record is whole
    seen = n;
    ++polls;
    ::usleep(500);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ds.refresh();
  EXPECT_EQ(ds.size(), kTotal);
  for (int64_t i = 0; i < kTotal; i += 17) expect_record(ds.get(i), i);
  EXPECT_GT(sizes.size(), 2u) << "the reader should have seen the dataset grow";
}

TEST(DataShards, PartialIndexEntryIsDroppedAndDamageIsNamed) {
  const std::string dir = (temp_dir("shards_cut") / "ds").string();
  {
    DatasetWriter w(dir);
    for (int64_t i = 0; i < 3; ++i) w.write(record_of(i));
  }
  { std::ofstream(dir + "/index.bin", std::ios::app) << "xyz"; }  // a writer died mid-append
  EXPECT_EQ(ShardedDataset(dir).size(), 3);
  {
    DatasetWriter w(dir);
    EXPECT_EQ(w.size(), 3);
    w.write(record_of(3));
  }
  ShardedDataset ds(dir);
  ASSERT_EQ(ds.size(), 4);
  expect_record(ds.get(3), 3);
  EXPECT_NE(message_of([&] { ShardedDataset(dir + "/nope"); }).find("index.bin"),
            std::string::npos);
}

TEST(DataShards, DamagedShardsGiveErrorsNotGarbage) {
  const std::string dir = (temp_dir("shards_bad") / "ds").string();
  {
    DatasetWriter w(dir);
    for (int64_t i = 0; i < 4; ++i) w.write(record_of(i));
  }
  const std::string shard = dir + "/shard-00000.bin";
  {  // overwrite record 0's header
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f.write("XXXX", 4);
  }
  ShardedDataset ds(dir);
  EXPECT_NE(message_of([&] { ds.get(0); }).find("record 0 is damaged"), std::string::npos);
  expect_record(ds.get(1), 1);
  fs::resize_file(shard, 100);  // cut: the index points past the end
  ShardedDataset cut(dir);
  EXPECT_NE(message_of([&] { cut.get(3); }).find("shorter than its index says"), std::string::npos);
  std::ofstream(dir + "/index.bin", std::ios::trunc) << "not an index at all";
  EXPECT_NE(message_of([&] { ShardedDataset x(dir); }).find("not a sharded dataset's index"),
            std::string::npos);
}

TEST(DataSqlite, TensorsWhoseBytesLookLikeAHeaderRoundTrip) {
  const std::string db = (temp_dir("sqlite4") / "b.db").string();
  // "EMBT" + version + a dtype + rank 1 + size 100, but only 3 data bytes: a header that lies.
  std::vector<uint8_t> fake = {'E', 'M', 'B', 'T', 1, uint8_t(DType::F32), 1, 0, 100, 0, 0, 0, 0, 0,
                               0,   0,   1,   2,   3};
  write_sqlite(db, "t", {{{"b"}, {tensor(fake, {int64_t(fake.size())})}}});
  // write_sqlite encodes the uint8 tensor itself, so it reads back as those 19 bytes.
  EXPECT_EQ(SqliteDataset(db, "t").get(0).tensor("b").to_vector<uint8_t>(), fake);
}

// ------------------------------------------------------------------ text

TEST(DataText, LinesJsonLinesAndTokenizer) {
  const fs::path d = temp_dir("text");
  std::ofstream(d / "a.txt") << "first line\r\n\n  \nsecond\nthird";
  LinesDataset lines((d / "a.txt").string());
  ASSERT_EQ(lines.size(), 3);
  EXPECT_EQ(lines.get(0), "first line");
  EXPECT_EQ(lines.get(2), "third");
  EXPECT_EQ(lines.line_of(1), 4);
  EXPECT_EQ(LinesDataset((d / "a.txt").string(), {.skip_empty = false}).size(), 5);
  std::ofstream(d / "b.jsonl")
      << "{\"text\": \"hello\", \"n\": 1}\n{\"text\": \"ab\", \"n\": [2]}\n[1]\n{\"n\": 3}\n";
  JsonLinesDataset j((d / "b.jsonl").string());
  ASSERT_EQ(j.size(), 4);
  EXPECT_EQ(j.get(0), "hello");
  EXPECT_EQ(JsonLinesDataset((d / "b.jsonl").string(), {.field = "n"}).get(1), "[2]");
  EXPECT_NE(message_of([&] { j.get(2); }).find("b.jsonl':3: expected a JSON object"),
            std::string::npos);
  EXPECT_NE(message_of([&] { j.get(3); }).find("no field 'text'"), std::string::npos);
  auto ids = tokenize(std::make_shared<JsonLinesDataset>((d / "b.jsonl").string()),
                      [](const std::string& s) {
                        std::vector<int64_t> v;
                        for (unsigned char c : s) v.push_back(c);
                        return v;
                      });
  EXPECT_EQ(ids->get(1).to_vector<int64_t>(), (std::vector<int64_t>{'a', 'b'}));
  EXPECT_EQ(ids->get(1).dtype(), DType::I64);
  EXPECT_NE(message_of([&] { LinesDataset((d / "none.txt").string()); }).find("none.txt"),
            std::string::npos);
}

// ------------------------------------------------------------------ ImageFolder

void write_ppm(const fs::path& p, int w, int h, uint8_t v) {
  std::ofstream f(p, std::ios::binary);
  f << "P6\n" << w << " " << h << "\n255\n";
  for (int i = 0; i < w * h * 3; ++i) f.put(char(v + i % 3));
}

TEST(DataImageFolder, ClassesFromFoldersImagesDecodedLazily) {
  const fs::path root = temp_dir("images");
  fs::create_directories(root / "cat" / "more");
  fs::create_directories(root / "dog");
  write_ppm(root / "dog" / "b.ppm", 4, 2, 10);
  write_ppm(root / "dog" / "a.PPM", 3, 5, 20);
  write_ppm(root / "cat" / "z.ppm", 2, 2, 30);
  write_ppm(root / "cat" / "more" / "y.ppm", 2, 3, 40);
  std::ofstream(root / "cat" / "notes.txt") << "not an image";
  ImageFolder ds(root.string());
  EXPECT_EQ(ds.classes(), (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(ds.size(), 4);
  EXPECT_EQ(ds.labels(), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(fs::path(ds.path(0)).filename(), "y.ppm");
  EXPECT_EQ(fs::path(ds.path(2)).filename(), "a.PPM");
  Example e = ds.get(2);
  EXPECT_EQ(e.first.shape(), (Shape{3, 5, 3}));
  EXPECT_EQ(e.first.dtype(), DType::U8);
  EXPECT_EQ(e.first.select(0, 1).select(0, 0).select(0, 0).item<uint8_t>(), 21);
  EXPECT_EQ(e.second.item<int64_t>(), 1);
  // A pluggable decoder (and a corrupt image's error, which names the file).
  ImageFolder sizes(root.string(), {.decode = [](const std::string& p) {
                      return scalar_tensor(int64_t(fs::file_size(p)), DType::I64);
                    }});
  EXPECT_GT(sizes.get(0).first.item<int64_t>(), 10);
  std::ofstream(root / "dog" / "c.png") << "\x89PNG\r\n\x1a\n garbage";  // corrupt
  ImageFolder broken(root.string());
  EXPECT_NE(message_of([&] { broken.get(4); }).find("c.png': cannot decode"), std::string::npos);
  std::ofstream(root / "dog" / "c.png", std::ios::trunc) << "P6\n60000 60000\n255\n";  // a bomb
  EXPECT_NE(message_of([&] {
              read_image_file((root / "dog" / "c.png").string());
            }).find("decompression bomb"),
            std::string::npos);
  fs::create_directories(root / "empty");
  EXPECT_NE(message_of([&] { ImageFolder x(root.string()); }).find("empty"), std::string::npos);
  EXPECT_NE(message_of([&] { ImageFolder x((root / "nope").string()); }).find("not a directory"),
            std::string::npos);
}

TEST(DataImageFolder, FeedsALoaderWithWorkers) {
  const fs::path root = temp_dir("images_loader");
  for (int c = 0; c < 3; ++c) {
    fs::create_directories(root / ("class" + std::to_string(c)));
    for (int i = 0; i < 5; ++i)
      write_ppm(root / ("class" + std::to_string(c)) / (std::to_string(i) + ".ppm"), 6, 4,
                uint8_t(10 * c + i));
  }
  auto ds = std::make_shared<ImageFolder>(root.string());
  auto [train, test] = std::pair{stratified_split<Example>(ds, ds->labels(), {0.8, 0.2}, 1)[0],
                                 stratified_split<Example>(ds, ds->labels(), {0.8, 0.2}, 1)[1]};
  EXPECT_EQ(train->size(), 12);
  EXPECT_EQ(test->size(), 3);
  DataLoader<Example> loader(train, {.batch_size = 4, .shuffle = true, .seed = 3, .workers = 2});
  int64_t seen = 0, label_sum = 0;
  for (auto& [x, y] : loader) {
    EXPECT_EQ(x.shape()[1], 3);
    seen += x.size(0);
    label_sum += sum(y).item<int64_t>();
  }
  EXPECT_EQ(seen, 12);
  EXPECT_EQ(label_sum, 4 * (0 + 1 + 2));  // 4 images of each class
}

TEST(DataShards, FeedALoaderWithWorkers) {
  const std::string dir = (temp_dir("shards_loader") / "ds").string();
  {
    DatasetWriter w(dir, {.shard_bytes = 2048});
    for (int64_t i = 0; i < 50; ++i)
      w.write(Example{full({3}, double(i)), scalar_tensor(i, DType::I64)});
  }
  DataLoader<Example> loader(as_examples(std::make_shared<ShardedDataset>(dir)),
                             {.batch_size = 8, .shuffle = true, .seed = 2, .workers = 2});
  int64_t total = 0;
  for (auto& [x, y] : loader) {
    EXPECT_TRUE(equal(x.select(1, 0), y.to(DType::F32)));
    total += sum(y).item<int64_t>();
  }
  EXPECT_EQ(total, 49 * 50 / 2);
}

// ------------------------------------------------------------------ splits

TEST(DataSplits, RandomSplitIsDeterministicAndCoversEverything) {
  std::vector<int> v(103);
  for (int i = 0; i < 103; ++i) v[size_t(i)] = i;
  auto ds = in_memory(v);
  EXPECT_EQ(split_sizes(103, {0.8, 0.1, 0.1}), (std::vector<int64_t>{83, 10, 10}));
  EXPECT_EQ(split_sizes(10, {0.33, 0.33, 0.34}), (std::vector<int64_t>{4, 3, 3}));
  auto a = random_split(ds, {0.8, 0.1, 0.1}, 7), b = random_split(ds, {0.8, 0.1, 0.1}, 7);
  std::set<int> all;
  for (size_t p = 0; p < 3; ++p)
    for (int64_t i = 0; i < a[p]->size(); ++i) {
      EXPECT_EQ(a[p]->get(i), b[p]->get(i));
      all.insert(a[p]->get(i));
    }
  EXPECT_EQ(all.size(), 103u);
  EXPECT_NE(random_split(ds, {0.5, 0.5}, 8)[0]->get(0), random_split(ds, {0.5, 0.5}, 9)[0]->get(0));
  EXPECT_THROW(random_split(ds, {0.5, 0.4}, 1), ValueError);
  EXPECT_THROW(random_split(ds, {1.5, -0.5}, 1), ValueError);
}

TEST(DataSplits, StratifiedSplitAndSampleKeepClassShares) {
  std::vector<int64_t> labels;
  for (int i = 0; i < 100; ++i) labels.push_back(i < 70 ? 0 : i < 90 ? 1 : 2);  // 70 / 20 / 10
  std::vector<int64_t> items(labels.size());
  for (size_t i = 0; i < items.size(); ++i) items[i] = int64_t(i);
  auto ds = in_memory(items);
  auto parts = stratified_split(ds, labels, {0.8, 0.2}, 3);
  auto count = [&](const DatasetPtr<int64_t>& p) {
    std::map<int64_t, int64_t> c;
    for (int64_t i = 0; i < p->size(); ++i) ++c[labels[size_t(p->get(i))]];
    return c;
  };
  EXPECT_EQ(count(parts[0]), (std::map<int64_t, int64_t>{{0, 56}, {1, 16}, {2, 8}}));
  EXPECT_EQ(count(parts[1]), (std::map<int64_t, int64_t>{{0, 14}, {1, 4}, {2, 2}}));
  auto s = stratified_sample(ds, labels, 15, 11);
  EXPECT_EQ(count(s), (std::map<int64_t, int64_t>{{0, 11}, {1, 3}, {2, 1}}));  // 10.5, 3, 1.5
  EXPECT_EQ(stratified_sample(ds, labels, 15, 11)->get(4), s->get(4));
  EXPECT_THROW(stratified_sample(ds, labels, 101, 1), ValueError);
  EXPECT_THROW(stratified_split(ds, {0, 1}, {1.0}, 1), ValueError);
}

}  // namespace

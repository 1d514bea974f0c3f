// ember/train/tensorboard: CRC-32C against published vectors, the record framing read back by
// hand from the format's description, the checked reader and its errors, and the Learner's event
// files (exact values and steps, no step twice after a resume).
#include "ember/train/tensorboard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "ember/detail/crc32c.h"
#include "store/store_test_util.h"
#include "train/synthetic.h"

namespace ember::train {
namespace {

namespace fs = std::filesystem;
using detail::crc32c;
using detail::crc32c_portable;

TEST(Crc32c, KnownVectors) {
  // RFC 3720 (iSCSI) appendix B.4 and the usual check value of "123456789".
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, 0), down(32, 0);
  for (int i = 0; i < 32; ++i) up[i] = char(i), down[i] = char(31 - i);
  for (auto f : {&crc32c, &crc32c_portable}) {
    EXPECT_EQ(f("", 0, 0), 0u);
    EXPECT_EQ(f("123456789", 9, 0), 0xe3069283u);
    EXPECT_EQ(f(zeros.data(), 32, 0), 0x8a9136aau);
    EXPECT_EQ(f(ones.data(), 32, 0), 0x62a8ab43u);
    EXPECT_EQ(f(up.data(), 32, 0), 0x46dd794eu);
    EXPECT_EQ(f(down.data(), 32, 0), 0x113fdb5cu);
    EXPECT_EQ(f("56789", 5, f("1234", 4, 0)), 0xe3069283u);  // continued
  }
  EXPECT_EQ(detail::mask_crc32c(0), 0xa282ead8u);
}

TEST(Crc32c, HardwareMatchesTableAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::string buf(1100, 0);
  for (char& c : buf) c = char(rng());
  for (size_t off = 0; off < 9; ++off)
    for (size_t n : {0, 1, 7, 8, 9, 15, 16, 63, 64, 1000})
      ASSERT_EQ(crc32c(buf.data() + off, n, 0x1234), crc32c_portable(buf.data() + off, n, 0x1234))
          << off << " " << n;
  RecordProperty("crc32c_hardware", detail::crc32c_hardware() ? "yes" : "no");
}

uint64_t u64_at(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}
uint32_t u32_at(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

TEST(TensorBoard, RecordsAreFramedAsTheFormatSays) {
  test::ScratchDir dir;
  std::string path;
  {
    TensorBoardWriter w(dir.path.string());
    path = w.path();
    w.add_scalar("train/loss", 0.25, 3, 1000.5);
  }
  EXPECT_EQ(fs::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u);
  const std::string b = test::read_bytes(path);
  // Walk the records with nothing but the framing rules.
  std::vector<std::string> data;
  for (size_t at = 0; at < b.size();) {
    ASSERT_LE(at + 12, b.size());
    const uint64_t n = u64_at(b, at);
    EXPECT_EQ(u32_at(b, at + 8), detail::mask_crc32c(crc32c(b.data() + at, 8)));
    ASSERT_LE(at + 16 + n, b.size());
    EXPECT_EQ(u32_at(b, at + 12 + n), detail::mask_crc32c(crc32c(b.data() + at + 12, n)));
    data.push_back(b.substr(at + 12, n));
    at += 16 + n;
  }
  ASSERT_EQ(data.size(), 2u);
  // Event 1: wall_time (field 1, fixed64), file_version (field 3) "brain.Event:2".
  EXPECT_EQ(data[0][0], '\x09');
  EXPECT_EQ(data[0].substr(9), std::string("\x1a\x0d") + "brain.Event:2");
  // Event 2: wall_time 1000.5, step 3, summary { value { tag "train/loss", simple_value 0.25 } }.
  double wall;
  std::memcpy(&wall, data[1].data() + 1, 8);
  EXPECT_EQ(wall, 1000.5);
  const float quarter = 0.25f;
  std::string value = std::string("\x0a\x0a") + "train/loss" + "\x15" +
                      std::string(reinterpret_cast<const char*>(&quarter), 4);
  std::string summary = "\x0a" + std::string(1, char(value.size())) + value;
  EXPECT_EQ(data[1].substr(9), "\x10\x03\x2a" + std::string(1, char(summary.size())) + summary);
}

TEST(TensorBoard, ReadsBackExactValuesStepsAndTimes) {
  test::ScratchDir dir;
  std::string path;
  const std::vector<ScalarEvent> want = {{"train/loss", 1, 1.5e9, 0.1f},
                                         {"valid/accuracy", 1, 1.5e9 + 0.25, 0.875f},
                                         {"batch/train/lr", 1234567890123, 1.6e9, 1e-30f},
                                         {"train/nan", -5, 2e9, NAN},
                                         {"ünïcode/tag", 0, 2e9, -INFINITY}};
  {
    TensorBoardWriter w(dir.path.string());
    path = w.path();
    for (const auto& e : want) w.add_scalar(e.tag, e.value, e.step, e.wall_time);
    w.sync();
  }
  EventFile f = read_event_file(path);
  EXPECT_EQ(f.file_version, "brain.Event:2");
  EXPECT_EQ(f.records, 6);
  ASSERT_EQ(f.scalars.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(f.scalars[i].tag, want[i].tag);
    EXPECT_EQ(f.scalars[i].step, want[i].step);
    EXPECT_EQ(f.scalars[i].wall_time, want[i].wall_time);
    EXPECT_EQ(std::memcmp(&f.scalars[i].value, &want[i].value, 4), 0) << want[i].tag;
  }
  // A second writer in the same second gets a name of its own.
  TensorBoardWriter again(dir.path.string());
  EXPECT_NE(again.path(), path);
  EXPECT_EQ(event_files(dir.path.string()).size(), 2u);
}

TEST(TensorBoard, CorruptFilesAreTypedErrors) {
  test::ScratchDir dir;
  std::string path;
  {
    TensorBoardWriter w(dir.path.string());
    path = w.path();
    w.add_scalar("train/loss", 0.5, 1);
  }
  const std::string good = test::read_bytes(path);
  const size_t first = 16 + u64_at(good, 0);  // where record 2 starts
  auto expect = [&](std::string bytes, auto error, const std::string& words) {
    test::write_bytes(path, bytes);
    try {
      read_event_file(path);
      ADD_FAILURE() << "no error for " << words;
    } catch (const decltype(error)& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  };
  std::string b = good;
  b[first + 14] ^= 1;  // in record 2's data
  expect(b, store::FormatError(""), "record 2 at byte " + std::to_string(first) + ": data CRC");
  b = good;
  b[first] ^= 1;  // record 2's length
  expect(b, store::FormatError(""), "length CRC");
  b = good;
  b[good.size() - 1] ^= 1;  // the data CRC itself
  expect(b, store::FormatError(""), "data CRC");
  expect(good.substr(0, good.size() - 3), store::TruncatedError(""), "bytes of data");
  expect(good.substr(0, first + 5), store::TruncatedError(""), "inside the record's length");
  // CRCs right, protocol buffer wrong: a length running past the event.
  std::string data = "\x2a\x7f";
  std::string rec(8, 0);
  uint64_t n = data.size();
  std::memcpy(rec.data(), &n, 8);
  uint32_t c = detail::mask_crc32c(crc32c(rec.data(), 8));
  rec.append(reinterpret_cast<const char*>(&c), 4);
  rec += data;
  c = detail::mask_crc32c(crc32c(data.data(), data.size()));
  rec.append(reinterpret_cast<const char*>(&c), 4);
  expect(good + rec, store::FormatError(""), "not a valid Event");
  EXPECT_THROW(read_event_file(dir.file("missing")), store::IOError);
}

TEST(TensorBoard, DropScalarsKeepsOtherRecordsByteForByte) {
  test::ScratchDir dir;
  std::string path;
  {
    TensorBoardWriter w(dir.path.string());
    path = w.path();
    for (int s = 1; s <= 5; ++s) w.add_scalar("x", s, s, 7.0);
  }
  const std::string before = test::read_bytes(path);
  drop_scalars(dir.path.string(), [](const std::string&, int64_t step) { return step <= 3; });
  const std::string after = test::read_bytes(path);
  EXPECT_EQ(after, before.substr(0, after.size()));  // a prefix: records 4 and 5 went
  EventFile f = read_event_file(path);
  EXPECT_EQ(f.file_version, "brain.Event:2");
  ASSERT_EQ(f.scalars.size(), 3u);
  EXPECT_EQ(f.scalars.back().step, 3);
  // A record cut short at the end (a write interrupted by a power loss) is dropped as well.
  test::write_bytes(path, after + before.substr(after.size(), 20));
  EXPECT_THROW(read_event_file(path), store::TruncatedError);
  drop_scalars(dir.path.string(), [](const std::string&, int64_t) { return true; });
  EXPECT_EQ(test::read_bytes(path), after);
  test::write_bytes(path, after + before.substr(after.size(), 5));
  drop_scalars(dir.path.string(), [](const std::string&, int64_t) { return true; });
  EXPECT_EQ(test::read_bytes(path), after);
  // Other damage is not repaired silently.
  std::string bad = after;
  bad[bad.size() - 1] ^= 1;
  test::write_bytes(path, bad);
  EXPECT_THROW(drop_scalars(dir.path.string(), [](const std::string&, int64_t) { return true; }),
               store::FormatError);
}

// (tag, step) -> how many times the directory has it.
std::map<std::pair<std::string, int64_t>, int> counts(const std::vector<ScalarEvent>& all) {
  std::map<std::pair<std::string, int64_t>, int> c;
  for (const auto& e : all) ++c[{e.tag, e.step}];
  return c;
}

float value_of(const std::vector<ScalarEvent>& all, const std::string& tag, int64_t step) {
  for (const auto& e : all)
    if (e.tag == tag && e.step == step) return e.value;
  ADD_FAILURE() << "no " << tag << " at step " << step;
  return NAN;
}

TEST(TensorBoard, LearnerWritesMetricsPerBatchAndEpoch) {
  test::ScratchDir dir;
  const std::string tb = dir.file("tb");
  test::TrainRun run({.epochs = 3, .tensorboard_dir = tb, .report_path = dir.file("report.html")});
  run.learner->add_train_metric(learning_rate());
  FitResult r = run.fit();
  const std::vector<ScalarEvent> all = read_event_dir(tb);
  ASSERT_EQ(event_files(tb).size(), 1u);
  for (const auto& [key, n] : counts(all)) EXPECT_EQ(n, 1) << key.first << " " << key.second;
  // 16 batches an epoch: loss, lr and accuracy per batch, at steps 1..48.
  for (const char* tag : {"batch/train/loss", "batch/train/lr", "batch/train/accuracy"})
    for (int64_t s = 1; s <= 48; ++s) EXPECT_EQ(counts(all).count({tag, s}), 1u) << tag << s;
  EXPECT_EQ(value_of(all, "batch/train/lr", 1), 1e-2f);
  EXPECT_EQ(value_of(all, "batch/train/lr", 48), 5e-3f);  // StepLR(2, 0.5): halved for epoch 3
  // Per epoch: exactly the history's values (as floats), at step = epoch.
  for (const auto& rec : r.history) {
    for (const auto& [name, v] : rec.train)
      EXPECT_EQ(value_of(all, "train/" + name, rec.epoch), float(v)) << name;
    for (const auto& [name, v] : rec.valid)
      EXPECT_EQ(value_of(all, "valid/" + name, rec.epoch), float(v)) << name;
  }
  EXPECT_EQ(value_of(all, "train/lr", 3), 5e-3f);
  const std::string html = test::read_bytes(dir.file("report.html"));
  for (const char* t : {"loss per epoch", "accuracy per epoch", "lr per epoch",
                        "loss per iteration", "lr per iteration", "accuracy per iteration"})
    EXPECT_NE(html.find(t), std::string::npos) << t;
}

TEST(TensorBoard, ResumedLearnerWritesNoStepTwice) {
  test::ScratchDir dir;
  const std::string ck = dir.file("ck"), tb = dir.file("tb");
  { test::TrainRun({.epochs = 3, .checkpoint_dir = ck, .tensorboard_dir = tb}).fit(); }
  // Lose epoch 3's checkpoint, as a crash just before it was written would: the event file has
  // epoch 3 and its batches, which the resumed fit runs again.
  fs::remove(fs::path(ck) / "epoch-0003.safetensors");
  test::TrainRun resumed({.epochs = 4, .checkpoint_dir = ck, .tensorboard_dir = tb});
  FitResult r = resumed.fit();
  ASSERT_EQ(r.history.size(), 4u);
  const std::vector<ScalarEvent> all = read_event_dir(tb);
  EXPECT_EQ(event_files(tb).size(), 2u);
  auto c = counts(all);
  for (const auto& [key, n] : c) EXPECT_EQ(n, 1) << key.first << " " << key.second;
  for (int64_t s = 1; s <= 64; ++s) EXPECT_EQ(c.count({"batch/train/loss", s}), 1u) << s;
  EXPECT_EQ(c.count({"batch/train/loss", 65}), 0u);
  for (int64_t e = 1; e <= 4; ++e) {
    EXPECT_EQ(value_of(all, "valid/loss", e), float(r.history[size_t(e - 1)].valid[0].second));
  }
  // A fresh fit in the directory (no checkpoint to resume) replaces what was there.
  test::TrainRun fresh({.epochs = 1, .tensorboard_dir = tb});
  fresh.fit();
  c = counts(read_event_dir(tb));
  EXPECT_EQ(c.count({"batch/train/loss", 17}), 0u);
  EXPECT_EQ(c.count({"valid/loss", 2}), 0u);
  EXPECT_EQ(c.count({"valid/loss", 1}), 1u);
}

}  // namespace
}  // namespace ember::train

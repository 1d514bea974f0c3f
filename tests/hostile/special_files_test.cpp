// Paths that are not plain files, and files that change under the reader: a FIFO, a device or a
// directory is refused at once without blocking, and a file truncated after it was opened gives
// an IOError on the next read (the reader never maps it, so there is no SIGBUS).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "ember/data/csv.h"
#include "ember/data/idx.h"
#include "ember/ember.h"
#include "ember/store/safetensors.h"
#include "ember/store/state.h"
#include "ember/train/metric_log.h"
#include "hostile/expect_error.h"
#include "hostile/files_util.h"
#include "store/store_test_util.h"

using namespace ember;

TEST(HostileFiles, FifosAreRefusedWithoutBlocking) {
  test::ScratchDir dir;
  std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  test::within_seconds(
      [fifo] { EXPECT_ERROR(store::SafetensorsFile(fifo), store::IOError, "store"); },
      "safetensors on a FIFO");
  test::within_seconds([fifo] { EXPECT_ERROR(store::load_state(fifo), store::IOError, "store"); },
                       "a state file on a FIFO");
  test::within_seconds([fifo] { EXPECT_ERROR(data::read_idx(fifo), ValueError, "read_idx"); },
                       "read_idx on a FIFO");
  test::within_seconds(
      [fifo] { EXPECT_ERROR(data::CsvTensorDataset(fifo), ValueError, "CsvDataset"); },
      "CSV on a FIFO");
  std::string log = dir.file("log.csv");
  ASSERT_EQ(::mkfifo(log.c_str(), 0600), 0);
  test::within_seconds(
      [log] { EXPECT_ERROR(train::read_metric_log(log), store::IOError, "store"); },
      "metric log on a FIFO");
}

TEST(HostileFiles, DevicesAndDirectoriesAreRefused) {
  test::ScratchDir dir;
  for (std::string p : {std::string("/dev/zero"), std::string("/dev/null"), dir.path.string()}) {
    EXPECT_ERROR(store::SafetensorsFile(p), store::IOError, "store");
    EXPECT_ERROR(store::load_safetensors(p), store::IOError, "store");
    EXPECT_ERROR(store::load_state(p), store::IOError, "store");
    EXPECT_ERROR(data::read_idx(p), ValueError, "read_idx");
    EXPECT_ERROR(data::read_csv(p), ValueError, "CsvDataset");
  }
  std::filesystem::create_directory(dir.file("d.csv"));
  EXPECT_ERROR(train::read_metric_log(dir.file("d.csv")), store::IOError, "store");
  EXPECT_ERROR(store::SafetensorsFile(dir.file("missing")), store::IOError, "store");
  EXPECT_ERROR(data::read_idx(dir.file("missing")), ValueError, "read_idx");
}

TEST(HostileFiles, TruncatedAfterOpenIsAnIOError) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  store::save_safetensors(p, {{"a", ones({4096})}, {"b", ones({4096}, {kF64})}});
  store::SafetensorsFile f(p);
  ASSERT_EQ(::truncate(p.c_str(), 64), 0);  // inside the header: every tensor is gone
  EXPECT_ERROR(f.get("a"), store::IOError, "store");
  EXPECT_ERROR(f.get("b", kF32), store::IOError, "store");
  EXPECT_ERROR(f.load_all(), store::IOError, "store");
  // Cut inside the second tensor: the first still reads.
  store::save_safetensors(p, {{"a", ones({4096})}, {"b", ones({4096}, {kF64})}});
  store::SafetensorsFile g(p);
  uint64_t header = 0;
  std::memcpy(&header, test::read_bytes(p).data(), 8);
  ASSERT_EQ(::truncate(p.c_str(), off_t(8 + header + 4096 * 4 + 100)), 0);
  EXPECT_EQ(sum(g.get("a")).item<double>(), 4096);
  EXPECT_ERROR(g.get("b"), store::IOError, "store");
  // A file emptied after it was opened.
  store::save_safetensors(p, {{"a", ones({4096})}});
  store::SafetensorsFile h(p);
  ASSERT_EQ(::truncate(p.c_str(), 0), 0);
  EXPECT_ERROR(h.get("a"), store::IOError, "store");
}

TEST(HostileFiles, FilesHeldInMemoryReadLikeFiles) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  store::save_safetensors(p, {{"a", arange(3.0)}, {"z", ones({2}, {kBool})}});
  auto f = store::SafetensorsFile::from_bytes(test::read_bytes(p), "w.safetensors");
  EXPECT_EQ(f.keys().size(), 2u);
  EXPECT_EQ(f.get("a").to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_ERROR(store::SafetensorsFile::from_bytes(test::st_file(R"({"a":1})")), store::FormatError,
               "store");
  EXPECT_ERROR(store::SafetensorsFile::from_bytes("short"), store::TruncatedError, "store");
}

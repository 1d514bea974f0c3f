// Exceptions of other libraries never escape: a name that is not UTF-8 is ember's ValueError
// (not nlohmann's type_error) wherever it is written, a checkpoint file name with an absurd
// number is ignored (not a std::out_of_range from std::stoll), and a header that is not UTF-8 is
// a FormatError.
#include <gtest/gtest.h>

#include <string>

#include "ember/ember.h"
#include "ember/store/safetensors.h"
#include "ember/train/learner.h"
#include "ember/train/metric_log.h"
#include "hostile/expect_error.h"
#include "hostile/files_util.h"
#include "store/store_test_util.h"

using namespace ember;

TEST(HostileForeign, NamesMustBeUtf8ToBeWritten) {
  test::ScratchDir dir;
  std::string p = dir.file("w.safetensors");
  store::save_safetensors(p, {{"a", zeros({1})}});
  EXPECT_ERROR(store::save_safetensors(p, {{"bad\xff", ones({1})}}), ValueError, "store");
  EXPECT_ERROR(store::save_safetensors(p, {{"a", ones({1})}}, {{"k", "\xc3"}}), ValueError,
               "store");
  EXPECT_ERROR(store::save_safetensors(p, {{"a", ones({1})}}, {{"\xe2\x82", "v"}}), ValueError,
               "store");
  EXPECT_EQ(store::SafetensorsFile(p).get("a").item<float>(), 0);             // the old file stayed
  EXPECT_NO_THROW(store::save_safetensors(p, {{"caf\xc3\xa9", ones({1})}}));  // valid UTF-8

  train::EpochRecord r;
  r.epoch = 0;
  r.seconds = 1;
  r.train.emplace_back("lo\xffss", 0.5);
  EXPECT_ERROR(train::write_metric_log(dir.file("log.jsonl"), {r}), ValueError, "metric_log");
  EXPECT_ERROR(train::history_to_json({r}), ValueError, "metric_log");
}

TEST(HostileForeign, HeadersThatAreNotUtf8AreFormatErrors) {
  EXPECT_ERROR(
      store::SafetensorsFile::from_bytes(test::st_file(
          "{\"\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", "abcd")),
      store::FormatError, "store");
  EXPECT_ERROR(
      store::SafetensorsFile::from_bytes(test::st_file("{\"__metadata__\":{\"k\":\"\xc3\"}}")),
      store::FormatError, "store");
  EXPECT_ERROR(train::history_from_json("[{\"epoch\":0,\"seconds\":1,\"train\":{\"\xff\":1}}]"),
               ValueError, "metric_log");
}

TEST(HostileForeign, CheckpointNamesWithAbsurdNumbersAreIgnored) {
  test::ScratchDir dir;
  test::write_bytes(dir.file("epoch-99999999999999999999.safetensors"), "x");
  test::write_bytes(dir.file("epoch-0001-step-99999999999999999999999.safetensors"), "x");
  test::write_bytes(dir.file("epoch-9007199254740993.safetensors"), "x");  // beyond 2^53
  EXPECT_EQ(train::Learner::latest_checkpoint(dir.path.string()), "");
  test::write_bytes(dir.file("epoch-0002.safetensors"), "x");
  EXPECT_EQ(train::Learner::latest_checkpoint(dir.path.string()),
            dir.file("epoch-0002.safetensors"));
}

// Fuzzes the metric log readers (CSV and JSON lines) and the checkpoint's history JSON.
#include <cstdint>
#include <string>

#include "ember/ember.h"
#include "ember/train/metric_log.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::run([&] { (void)train::history_from_json(text); });
  fuzz::run([&] { (void)train::read_metric_log(fuzz::write_scratch("log.csv", data, size)); });
  fuzz::run([&] { (void)train::read_metric_log(fuzz::write_scratch("log.jsonl", data, size)); });
  return 0;
}

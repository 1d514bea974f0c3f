// Fuzzes the CSV reader: rows and fields (quotes, delimiters, line ends), the numeric dataset
// built from a file, and parse_float/parse_int on every field.
#include <cstdint>
#include <string>

#include "ember/data/csv.h"
#include "ember/ember.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ember;
  std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::run([&] {
    for (const auto& row : data::detail::parse_csv(text, "fuzz.csv", {}))
      for (const auto& f : row.fields) {
        fuzz::run([&] { (void)data::parse_float(f); });
        fuzz::run([&] { (void)data::parse_int(f); });
      }
  });
  fuzz::run(
      [&] { (void)data::detail::parse_csv(text, "fuzz.csv", {.delimiter = ';', .header = true}); });
  const std::string& p = fuzz::write_scratch("fuzz.csv", data, size);
  fuzz::run([&] {
    data::CsvTensorDataset ds(p);
    for (int64_t i = 0; i < ds.size() && i < 64; ++i) (void)ds.get(i);
  });
  return 0;
}

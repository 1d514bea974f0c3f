#pragma once
// CSV datasets: rows split into fields (RFC 4180 quoting within a line), parsed once when the
// dataset is made, so a malformed row fails early with its file and line number.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/tensor.h"

namespace ember::data {

struct CsvOptions {
  char delimiter = ',';
  /// Skip the first non-empty line (column names).
  bool header = false;
};

/// One row of a CSV file: its fields and its 1-based line number in the file.
struct CsvRow {
  int64_t line = 0;
  std::vector<std::string> fields;
};

/// Reads every non-blank row of `path` (a regular file of at most 16 GiB, read whole). Throws
/// ValueError naming file and line for an unopenable, non-regular or larger file, or an
/// unterminated quote.
std::vector<CsvRow> read_csv(const std::string& path, const CsvOptions& o = {});

/// Parses a whole field as a number; throws ValueError naming the field when it is not one.
float parse_float(const std::string& field);
int64_t parse_int(const std::string& field);

namespace detail {
[[noreturn]] void throw_csv_row(const std::string& path, int64_t line, const std::string& why);
/// read_csv of text in memory (`path` names it in messages).
std::vector<CsvRow> parse_csv(std::string_view text, const std::string& path, const CsvOptions& o);
}  // namespace detail

/// Rows of a CSV file parsed into items by `parse(fields)`. An exception from the parser becomes
/// a ValueError "[CsvDataset] path:line: why".
template <class T>
class CsvDataset final : public Dataset<T> {
 public:
  using Parser = std::function<T(const std::vector<std::string>& fields)>;
  CsvDataset(const std::string& path, Parser parse, const CsvOptions& o = {}) {
    for (auto& row : read_csv(path, o)) {
      try {
        items_.push_back(parse(row.fields));
      } catch (const std::exception& e) {
        detail::throw_csv_row(path, row.line, e.what());
      }
    }
  }
  T get(int64_t i) const override {
    detail::check_item_index("CsvDataset", i, size());
    return items_[size_t(i)];
  }
  int64_t size() const override { return int64_t(items_.size()); }

 private:
  std::vector<T> items_;
};

/// Each row as a 1-D f32 tensor of its fields; every row must have the same number of fields
/// and every field must be a number (else ValueError with file and line).
class CsvTensorDataset final : public Dataset<Tensor> {
 public:
  explicit CsvTensorDataset(const std::string& path, const CsvOptions& o = {});
  Tensor get(int64_t i) const override;
  int64_t size() const override { return rows_; }
  int64_t columns() const { return cols_; }

 private:
  std::vector<float> values_;
  int64_t rows_ = 0, cols_ = 0;
};

}  // namespace ember::data

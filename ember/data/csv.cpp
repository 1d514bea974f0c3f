#include "ember/data/csv.h"

#include <algorithm>
#include <charconv>

#include "ember/detail/file.h"
#include "ember/detail/text.h"
#include "ember/error.h"

namespace ember::data {
namespace detail {
void throw_csv_row(const std::string& path, int64_t line, const std::string& why) {
  throw ValueError("[CsvDataset] " + path + ":" + std::to_string(line) + ": " + why);
}
}  // namespace detail

namespace {
// The file is read whole; a larger one is refused before anything is allocated.
constexpr uint64_t kMaxCsvBytes = uint64_t(1) << 34;

/// Splits one line; quoted fields may hold the delimiter and doubled quotes ("").
bool split_line(const std::string& s, char delim, std::vector<std::string>& out) {
  out.clear();
  std::string cur;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quoted) {
      if (c == '"' && i + 1 < s.size() && s[i + 1] == '"') cur += '"', ++i;
      else if (c == '"') quoted = false;
      else cur += c;
    } else if (c == '"' && cur.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == delim) {
      out.push_back(std::move(cur));
      cur.clear();
      was_quoted = false;
    } else {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return !quoted;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}
}  // namespace

std::vector<CsvRow> read_csv(const std::string& path, const CsvOptions& o) {
  std::string text, error;
  if (!ember::detail::read_whole_file(path, kMaxCsvBytes, text, error))
    throw ValueError("[CsvDataset] " + path + ": " + error);
  return detail::parse_csv(text, path, o);
}

std::vector<CsvRow> detail::parse_csv(std::string_view text, const std::string& path,
                                      const CsvOptions& o) {
  std::vector<CsvRow> rows;
  std::string line;
  int64_t n = 0;
  bool skip_header = o.header;
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    line.assign(text.substr(at, end - at));
    at = end + 1;
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    CsvRow row{n, {}};
    if (!split_line(line, o.delimiter, row.fields))
      detail::throw_csv_row(path, n, "unterminated quoted field");
    if (skip_header) {
      skip_header = false;
      continue;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

float parse_float(const std::string& field) {
  std::string t = trim(field);
  float v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size())
    throw ValueError("[parse_float] expected a number, found '" + ember::detail::shorten(field, 60) + "'");
  return v;
}

int64_t parse_int(const std::string& field) {
  std::string t = trim(field);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size())
    throw ValueError("[parse_int] expected an integer, found '" + ember::detail::shorten(field, 60) + "'");
  return v;
}

CsvTensorDataset::CsvTensorDataset(const std::string& path, const CsvOptions& o) {
  for (auto& row : read_csv(path, o)) {
    int64_t nf = int64_t(row.fields.size());
    if (rows_ == 0) cols_ = nf;
    else if (nf != cols_)
      detail::throw_csv_row(path, row.line, "expected " + std::to_string(cols_) +
                                                " fields, found " + std::to_string(nf));
    for (size_t k = 0; k < row.fields.size(); ++k) {
      try {
        values_.push_back(parse_float(row.fields[k]));
      } catch (const Error& e) {
        detail::throw_csv_row(path, row.line, "field " + std::to_string(k + 1) + ": " + e.what());
      }
    }
    ++rows_;
  }
}

Tensor CsvTensorDataset::get(int64_t i) const {
  ember::data::detail::check_item_index("CsvTensorDataset", i, rows_);
  std::vector<float> row(values_.begin() + i * cols_, values_.begin() + (i + 1) * cols_);
  return tensor(row, {cols_});
}

}  // namespace ember::data

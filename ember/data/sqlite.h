#pragma once
// SQLite datasets (Debian libsqlite3-dev): each row of a table is an item; INTEGER, REAL and TEXT
// columns read as numbers and strings, BLOB columns as tensors. data::write_sqlite writes rows
// back, tensors as self-describing blobs (dtype and shape kept), so a table round-trips.
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/tensor.h"

namespace ember::data {

/// One value of a row: NULL, INTEGER, REAL, TEXT or a tensor (BLOB). A blob that data::
/// write_sqlite did not write reads as a 1-D uint8 tensor of its bytes.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string, Tensor>;

/// A row: its column names and values, in the same order.
struct Row {
  std::vector<std::string> columns;
  std::vector<SqlValue> values;
  /// The value of `column`; throws ValueError naming the columns there are when it is absent.
  const SqlValue& at(std::string_view column) const;
  /// `column` as a tensor: a blob's tensor, an integer as a 0-d int64, a real as a 0-d float64;
  /// throws ValueError for TEXT and NULL.
  Tensor tensor(std::string_view column) const;
};

struct SqliteOptions {
  /// Columns to read (default: all of the table's).
  std::vector<std::string> columns = {};
  /// An SQL condition selecting rows (e.g. "split = 'train'"); empty: every row.
  std::string where = "";
  /// The rows' order, an SQL ORDER BY expression.
  std::string order_by = "rowid";
};

/// The rows of `table` in the SQLite database at `path` (opened read-only). The rows' ids are
/// read when the dataset is made (size() is fixed then); get(i) reads row i. Throws ValueError
/// naming the file for a missing file, table or column.
class SqliteDataset final : public Dataset<Row> {
 public:
  SqliteDataset(const std::string& path, const std::string& table, const SqliteOptions& o = {});
  Row get(int64_t i) const override;
  int64_t size() const override;
  const std::vector<std::string>& columns() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

/// Writes `rows` as table `table` of a new SQLite database at `path`, replacing it atomically
/// (the database is built in a temporary file beside it, then renamed over it). The columns are
/// rows[0]'s; every row must name the same columns. Each column's type is its first non-NULL
/// value's (INTEGER, REAL, TEXT or BLOB); tensors are stored as blobs that keep dtype and shape.
void write_sqlite(const std::string& path, const std::string& table, const std::vector<Row>& rows);

}  // namespace ember::data

// SQLite datasets. One read-only connection per dataset, serialised by a mutex around one
// prepared statement (SELECT ... WHERE rowid = ?), so get() is safe from the loader's workers.
// Tensor blobs: "EMBT", version 1, dtype, ndim, a zero byte, ndim int64 sizes, then the elements
// (contiguous, little-endian).
#include "ember/data/sqlite.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

#include "ember/ops/creation.h"

namespace ember::data {
namespace {

constexpr char kMagic[4] = {'E', 'M', 'B', 'T'};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw ValueError("[sqlite] '" + path + "': " + what);
}

std::string quoted(const std::string& name) {  // an SQL identifier, "double-quoted"
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

struct Db {
  sqlite3* db = nullptr;
  ~Db() { sqlite3_close(db); }
};
struct Stmt {
  sqlite3_stmt* s = nullptr;
  ~Stmt() { sqlite3_finalize(s); }
};

void prepare(sqlite3* db, const std::string& sql, Stmt& st, const std::string& path) {
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st.s, nullptr) != SQLITE_OK)
    fail(path, std::string(sqlite3_errmsg(db)) + " (in: " + sql + ")");
}

std::string encode_tensor(const Tensor& t) {
  const Tensor c = t.to(Device::flex()).contiguous();
  if (c.dim() > 255) throw ValueError("[write_sqlite] a tensor of more than 255 dims");
  std::string b(kMagic, 4);
  b += char(1), b += char(c.dtype()), b += char(c.dim()), b += char(0);
  for (int64_t d : c.shape()) b.append(reinterpret_cast<const char*>(&d), 8);
  if (c.nbytes()) b.append(static_cast<const char*>(c.raw_data()), c.nbytes());
  return b;
}

Tensor decode_blob(const void* p, size_t n) {
  const char* b = static_cast<const char*>(p);
  if (n >= 8 && std::memcmp(b, kMagic, 4) == 0 && b[4] == 1 && uint8_t(b[5]) < kNumDTypes) {
    const DType dt = DType(uint8_t(b[5]));
    const size_t nd = uint8_t(b[6]);
    if (n >= 8 + 8 * nd) {
      Shape s(nd);
      std::memcpy(s.data(), b + 8, 8 * nd);
      bool ok = true;
      uint64_t count = 1;
      for (int64_t d : s) {
        ok = ok && d >= 0 && d < (int64_t(1) << 40);
        count *= ok ? uint64_t(d) : 0;
      }
      if (ok && count * itemsize(dt) == n - 8 - 8 * nd)
        return from_blob_copy(b + 8 + 8 * nd, dt, s, dt, Device::flex());
    }
  }
  return from_blob_copy(b, DType::U8, {int64_t(n)}, DType::U8, Device::flex());
}

}  // namespace

const SqlValue& Row::at(std::string_view column) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == column) return values[i];
  std::string have;
  for (const auto& c : columns) have += (have.empty() ? "" : ", ") + c;
  throw ValueError("[Row] no column '" + std::string(column) + "' (columns: " + have + ")");
}

Tensor Row::tensor(std::string_view column) const {
  const SqlValue& v = at(column);
  if (auto* t = std::get_if<Tensor>(&v)) return *t;
  if (auto* i = std::get_if<int64_t>(&v)) return scalar_tensor(*i, DType::I64);
  if (auto* d = std::get_if<double>(&v)) return scalar_tensor(*d, DType::F64);
  throw ValueError("[Row] column '" + std::string(column) + "' is " +
                   (std::holds_alternative<std::string>(v) ? "TEXT" : "NULL") + ", not a tensor");
}

struct SqliteDataset::Impl {
  std::string path;
  Db db;
  Stmt get;
  std::vector<std::string> columns;
  std::vector<int64_t> rowids;
  std::mutex mu;
};

SqliteDataset::SqliteDataset(const std::string& path, const std::string& table,
                             const SqliteOptions& o)
    : impl_(std::make_shared<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  if (access(path.c_str(), R_OK) != 0)
    fail(path, "cannot open: " + std::string(std::strerror(errno)));
  if (sqlite3_open_v2(path.c_str(), &m.db.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    fail(path, std::string("cannot open: ") + sqlite3_errmsg(m.db.db));
  m.columns = o.columns;
  if (m.columns.empty()) {
    Stmt info;
    prepare(m.db.db, "SELECT name FROM pragma_table_info(" + quoted(table) + ")", info, path);
    while (sqlite3_step(info.s) == SQLITE_ROW)
      m.columns.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(info.s, 0)));
    if (m.columns.empty()) fail(path, "no table '" + table + "'");
  }
  std::string cols;
  for (const auto& c : m.columns) cols += (cols.empty() ? "" : ", ") + quoted(c);
  const std::string where = o.where.empty() ? "" : " WHERE " + o.where;
  Stmt ids;
  prepare(m.db.db, "SELECT rowid FROM " + quoted(table) + where + " ORDER BY " + o.order_by, ids,
          path);
  int rc;
  while ((rc = sqlite3_step(ids.s)) == SQLITE_ROW)
    m.rowids.push_back(sqlite3_column_int64(ids.s, 0));
  if (rc != SQLITE_DONE) fail(path, sqlite3_errmsg(m.db.db));
  prepare(m.db.db, "SELECT " + cols + " FROM " + quoted(table) + " WHERE rowid = ?", m.get, path);
}

int64_t SqliteDataset::size() const { return int64_t(impl_->rowids.size()); }
const std::vector<std::string>& SqliteDataset::columns() const { return impl_->columns; }

Row SqliteDataset::get(int64_t i) const {
  detail::check_item_index("SqliteDataset", i, size());
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  sqlite3_stmt* s = m.get.s;
  sqlite3_reset(s);
  sqlite3_bind_int64(s, 1, m.rowids[size_t(i)]);
  if (sqlite3_step(s) != SQLITE_ROW) fail(m.path, "row " + std::to_string(i) + " is gone");
  Row r{m.columns, {}};
  for (int c = 0; c < int(m.columns.size()); ++c) {
    switch (sqlite3_column_type(s, c)) {
      case SQLITE_INTEGER:
        r.values.emplace_back(int64_t(sqlite3_column_int64(s, c)));
        break;
      case SQLITE_FLOAT:
        r.values.emplace_back(sqlite3_column_double(s, c));
        break;
      case SQLITE_TEXT:
        r.values.emplace_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, c)),
                                          size_t(sqlite3_column_bytes(s, c))));
        break;
      case SQLITE_BLOB:
        r.values.emplace_back(
            decode_blob(sqlite3_column_blob(s, c), size_t(sqlite3_column_bytes(s, c))));
        break;
      default:
        r.values.emplace_back(std::monostate{});
    }
  }
  sqlite3_reset(s);
  return r;
}

void write_sqlite(const std::string& path, const std::string& table, const std::vector<Row>& rows) {
  if (rows.empty())
    throw ValueError("[write_sqlite] expected at least one row (it names the columns)");
  const std::vector<std::string>& cols = rows[0].columns;
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r].columns != cols || rows[r].values.size() != cols.size())
      throw ValueError("[write_sqlite] row " + std::to_string(r) +
                       " does not have row 0's columns");
  std::vector<std::string> types(cols.size(), "");
  for (size_t c = 0; c < cols.size(); ++c)
    for (const Row& row : rows) {
      const SqlValue& v = row.values[c];
      if (std::holds_alternative<std::monostate>(v)) continue;
      types[c] = std::holds_alternative<int64_t>(v)       ? "INTEGER"
                 : std::holds_alternative<double>(v)      ? "REAL"
                 : std::holds_alternative<std::string>(v) ? "TEXT"
                                                          : "BLOB";
      break;
    }
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  std::remove(tmp.c_str());
  try {
    Db db;
    if (sqlite3_open(tmp.c_str(), &db.db) != SQLITE_OK) fail(path, sqlite3_errmsg(db.db));
    std::string create = "CREATE TABLE " + quoted(table) + " (", qs;
    for (size_t c = 0; c < cols.size(); ++c) {
      create += (c ? ", " : "") + quoted(cols[c]) + (types[c].empty() ? "" : " " + types[c]);
      qs += c ? ", ?" : "?";
    }
    create += ")";
    char* err = nullptr;
    auto exec = [&](const std::string& sql) {
      if (sqlite3_exec(db.db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        const std::string e = err ? err : "error";
        sqlite3_free(err);
        fail(path, e);
      }
    };
    exec(create);
    exec("BEGIN");
    Stmt ins;
    prepare(db.db, "INSERT INTO " + quoted(table) + " VALUES (" + qs + ")", ins, path);
    for (const Row& row : rows) {
      sqlite3_reset(ins.s);
      std::vector<std::string> blobs(cols.size());
      for (int c = 0; c < int(cols.size()); ++c) {
        const SqlValue& v = row.values[size_t(c)];
        if (auto* i = std::get_if<int64_t>(&v))
          sqlite3_bind_int64(ins.s, c + 1, *i);
        else if (auto* d = std::get_if<double>(&v))
          sqlite3_bind_double(ins.s, c + 1, *d);
        else if (auto* s = std::get_if<std::string>(&v))
          sqlite3_bind_text(ins.s, c + 1, s->data(), int(s->size()), SQLITE_STATIC);
        else if (auto* t = std::get_if<Tensor>(&v)) {
          blobs[size_t(c)] = encode_tensor(*t);
          sqlite3_bind_blob(ins.s, c + 1, blobs[size_t(c)].data(), int(blobs[size_t(c)].size()),
                            SQLITE_STATIC);
        } else
          sqlite3_bind_null(ins.s, c + 1);
      }
      if (sqlite3_step(ins.s) != SQLITE_DONE) fail(path, sqlite3_errmsg(db.db));
    }
    exec("COMMIT");
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail(path, "cannot rename the finished database over it: " + std::string(std::strerror(errno)));
  }
}

}  // namespace ember::data

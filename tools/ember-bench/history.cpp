#include "history.h"

#include <sqlite3.h>

#include <cstdlib>
#include <sstream>

#include "errors.h"

namespace ember::benchtool {
namespace {

const char* const kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE machines(
  fingerprint TEXT PRIMARY KEY, cpu_model TEXT NOT NULL, flags TEXT NOT NULL,
  avx2 INTEGER NOT NULL, avx512 INTEGER NOT NULL, cores INTEGER NOT NULL,
  memory_gib INTEGER NOT NULL, gpus INTEGER NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT, started TEXT NOT NULL, commit_id TEXT NOT NULL,
  dirty INTEGER NOT NULL, machine TEXT NOT NULL REFERENCES machines(fingerprint),
  hostname TEXT NOT NULL, threads INTEGER NOT NULL, clock TEXT NOT NULL, rounds INTEGER NOT NULL,
  suites TEXT NOT NULL, devices TEXT NOT NULL, peers TEXT NOT NULL, command TEXT NOT NULL);
CREATE INDEX runs_by_commit ON runs(commit_id);
-- source: 'ember' for ember's rows, else the peer's name (its rows have device '').
CREATE TABLE results(
  run_id INTEGER NOT NULL REFERENCES runs(id), source TEXT NOT NULL, suite TEXT NOT NULL,
  name TEXT NOT NULL, device TEXT NOT NULL, median_ms REAL, min_ms REAL, max_ms REAL,
  q1_ms REAL, q3_ms REAL, n INTEGER NOT NULL, samples TEXT NOT NULL, flops REAL NOT NULL,
  error TEXT NOT NULL, PRIMARY KEY(run_id, source, name, device));
CREATE INDEX results_by_row ON results(name, device);
)sql";

// A prepared statement, finalized on scope exit.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) s = nullptr;
  }
  ~Stmt() { sqlite3_finalize(s); }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s, i, v);
    return *this;
  }
  Stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s, i, v);
    return *this;
  }
  Stmt& bind(int i, int v) { return bind(i, int64_t(v)); }
  int step() { return sqlite3_step(s); }
  std::string text(int i) {
    const unsigned char* t = sqlite3_column_text(s, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  double real(int i) { return sqlite3_column_double(s, i); }
  int64_t integer(int i) { return sqlite3_column_int64(s, i); }
};

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out;
}
std::vector<std::string> split(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}
std::string samples_text(const std::vector<double>& xs) {
  std::ostringstream o;
  o.precision(9);
  for (size_t i = 0; i < xs.size(); ++i) o << (i ? "," : "") << xs[i];
  return o.str();
}
std::vector<double> samples_of(const std::string& s) {
  std::vector<double> out;
  for (const auto& p : split(s)) out.push_back(std::strtod(p.c_str(), nullptr));
  return out;
}
}  // namespace

void History::fail(const std::string& what) {
  throw ToolError(kHistoryFailed, "history " + path_ + ": " + what +
                                      (db_ ? std::string(": ") + sqlite3_errmsg(db_) : ""));
}

void History::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw ToolError(kHistoryFailed, "history " + path_ + ": " + msg);
  }
}

History::History(const std::string& path, bool create) : path_(path) {
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw ToolError(kHistoryFailed, "cannot open history " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);  // another ember-bench writing: wait for it
  try {
    exec("PRAGMA foreign_keys = ON");
    // BEGIN IMMEDIATE takes the write lock: an unwritable file or folder fails here, before any
    // benchmark has run, and a garbage file fails as "not a database" without being touched.
    exec("BEGIN IMMEDIATE");
    Stmt v(db_, "PRAGMA user_version");
    if (!v.s || v.step() != SQLITE_ROW) fail("cannot read the schema version");
    const int64_t version = v.integer(0);
    Stmt n(db_, "SELECT count(*) FROM sqlite_master");
    if (!n.s || n.step() != SQLITE_ROW) fail("cannot read the tables");
    const int64_t tables = n.integer(0);
    if (version == 0 && tables == 0) {
      exec(kSchema);
      exec(
          "INSERT INTO meta(key, value) VALUES ('format', 'ember-bench history'), "
          "('schema_version', '" +
          std::to_string(kSchemaVersion) + "')");
      exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    } else if (version == 0) {
      fail("the file is an SQLite database but not an ember-bench history (no schema version)");
    } else if (version > kSchemaVersion) {
      fail("schema version " + std::to_string(version) + " is newer than this ember-bench's (" +
           std::to_string(kSchemaVersion) + "); use a newer ember-bench");
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

History::~History() { sqlite3_close(db_); }

int64_t History::append(RunRecord& run) {
  exec("BEGIN IMMEDIATE");
  try {
    const Machine& m = run.machine;
    Stmt mach(db_, "INSERT OR IGNORE INTO machines VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    if (!mach.s) fail("cannot prepare the machine row");
    mach.bind(1, m.fingerprint)
        .bind(2, m.cpu_model)
        .bind(3, m.flags)
        .bind(4, int(m.avx2))
        .bind(5, int(m.avx512))
        .bind(6, m.cores)
        .bind(7, m.memory_gib)
        .bind(8, m.gpus);
    if (mach.step() != SQLITE_DONE) fail("cannot write the machine");
    Stmt r(db_,
           "INSERT INTO runs(started, commit_id, dirty, machine, hostname, threads, clock, rounds, "
           "suites, devices, peers, command) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
           "?12)");
    if (!r.s) fail("cannot prepare the run row");
    r.bind(1, run.started)
        .bind(2, run.commit)
        .bind(3, int(run.dirty))
        .bind(4, m.fingerprint)
        .bind(5, m.hostname)
        .bind(6, run.threads)
        .bind(7, run.clock)
        .bind(8, run.rounds)
        .bind(9, join(run.suites))
        .bind(10, join(run.devices))
        .bind(11, join(run.peers))
        .bind(12, run.command);
    if (r.step() != SQLITE_DONE) fail("cannot write the run");
    const int64_t id = sqlite3_last_insert_rowid(db_);
    const char* row_sql =
        "INSERT INTO results VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";
    auto put = [&](const std::string& source, const std::string& suite, const std::string& name,
                   const std::string& device, const Stats& s, const std::vector<double>& xs,
                   double flops, const std::string& error) {
      Stmt q(db_, row_sql);
      if (!q.s) fail("cannot prepare a result row");
      q.bind(1, id).bind(2, source).bind(3, suite).bind(4, name).bind(5, device);
      if (s.n > 0) q.bind(6, s.median).bind(7, s.min).bind(8, s.max).bind(9, s.q1).bind(10, s.q3);
      q.bind(11, s.n).bind(12, samples_text(xs)).bind(13, flops).bind(14, error);
      if (q.step() != SQLITE_DONE) fail("cannot write the row " + name);
    };
    for (const auto& e : run.ember)
      put("ember", e.suite, e.name, e.device, e.stats, e.samples, e.flops, e.error);
    for (const auto& p : run.peer_rows) put(p.peer, "", p.row, "", p.stats, p.rounds, 0, "");
    exec("COMMIT");
    run.id = id;
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<RunRecord> History::runs() {
  std::vector<RunRecord> out;
  Stmt q(db_,
         "SELECT r.id, r.started, r.commit_id, r.dirty, r.hostname, r.threads, r.clock, r.rounds, "
         "r.suites, r.devices, r.peers, r.command, m.fingerprint, m.cpu_model, m.flags, m.avx2, "
         "m.avx512, m.cores, m.memory_gib, m.gpus FROM runs r JOIN machines m ON "
         "m.fingerprint = r.machine ORDER BY r.id");
  if (!q.s) fail("cannot read the runs");
  while (q.step() == SQLITE_ROW) {
    RunRecord r;
    r.id = q.integer(0);
    r.started = q.text(1);
    r.commit = q.text(2);
    r.dirty = q.integer(3) != 0;
    r.machine.hostname = q.text(4);
    r.threads = int(q.integer(5));
    r.clock = q.text(6);
    r.rounds = int(q.integer(7));
    r.suites = split(q.text(8));
    r.devices = split(q.text(9));
    r.peers = split(q.text(10));
    r.command = q.text(11);
    r.machine.fingerprint = q.text(12);
    r.machine.cpu_model = q.text(13);
    r.machine.flags = q.text(14);
    r.machine.avx2 = q.integer(15) != 0;
    r.machine.avx512 = q.integer(16) != 0;
    r.machine.cores = int(q.integer(17));
    r.machine.memory_gib = int(q.integer(18));
    r.machine.gpus = int(q.integer(19));
    out.push_back(std::move(r));
  }
  return out;
}

RunRecord History::load(int64_t id) {
  for (auto& r : runs()) {
    if (r.id != id) continue;
    Stmt q(db_,
           "SELECT source, suite, name, device, median_ms, min_ms, max_ms, q1_ms, q3_ms, n, "
           "samples, flops, error FROM results WHERE run_id = ?1 ORDER BY rowid");
    if (!q.s) fail("cannot read the results");
    q.bind(1, id);
    while (q.step() == SQLITE_ROW) {
      Stats s{.median = q.real(4),
              .min = q.real(5),
              .max = q.real(6),
              .q1 = q.real(7),
              .q3 = q.real(8),
              .n = int(q.integer(9))};
      if (q.text(0) == "ember") {
        r.ember.push_back({.suite = q.text(1),
                           .name = q.text(2),
                           .device = q.text(3),
                           .stats = s,
                           .samples = samples_of(q.text(10)),
                           .flops = q.real(11),
                           .error = q.text(12)});
      } else {
        r.peer_rows.push_back(
            {.peer = q.text(0), .row = q.text(2), .stats = s, .rounds = samples_of(q.text(10))});
      }
    }
    return r;
  }
  throw ToolError(kUsage, "history " + path_ + " has no run " + std::to_string(id));
}

std::vector<int64_t> History::resolve(const std::string& spec) {
  std::string s = spec;
  if (!s.empty() && s[0] == '#') s = s.substr(1);
  const bool all_digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  std::vector<int64_t> out;
  const auto all = runs();
  // A short all-digit spec is a run id; a longer one may be a commit prefix too.
  if (all_digits && (spec[0] == '#' || s.size() < 4)) {
    for (const auto& r : all)
      if (r.id == std::stoll(s)) out.push_back(r.id);
  } else if (s.size() >= 4) {
    for (const auto& r : all)
      if (r.commit.rfind(s, 0) == 0) out.push_back(r.id);
    if (out.empty() && all_digits)
      for (const auto& r : all)
        if (r.id == std::stoll(s)) out.push_back(r.id);
  }
  if (out.empty())
    throw ToolError(kUsage, "history " + path_ + ": '" + spec +
                                "' names no run (expected a run id such as 12 or #12, or a commit "
                                "prefix of at least 4 characters)");
  return out;
}

}  // namespace ember::benchtool

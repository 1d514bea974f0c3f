#include "ember/train/metric_log.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ember/detail/decimal.h"
#include "ember/detail/file.h"
#include "ember/detail/json.h"
#include "ember/detail/text.h"
#include "ember/error.h"
#include "ember/store/atomic_file.h"
#include "ember/store/format.h"
#include "ember/store/safetensors.h"

// Numbers are written in the shortest form that reads back to the same double (exact_decimal in
// CSV, nlohmann's in JSON), so finite values round-trip exactly. ordered_json keeps the metrics'
// order, which a checkpointed history must reproduce.

namespace ember::train {
namespace {

using Json = nlohmann::ordered_json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kTag = "metric_log";
// Records nest three levels ([{"train": {...}}]); a log line two.
constexpr int kMaxDepth = 3;
// Logs and histories are read whole.
constexpr uint64_t kMaxLogBytes = uint64_t(1) << 30;

// JSON text, or a ValueError (not nlohmann's type_error) for a metric name that is not UTF-8.
std::string dump(const Json& j) {
  try {
    return j.dump();
  } catch (const nlohmann::json::exception& e) {
    detail::throw_value(kTag, std::string("expected metric names in UTF-8: ") + e.what());
  }
}
// A value for a message: short whatever it holds.
std::string brief(const Json& j) { return detail::shorten(dump(j), 80); }

[[noreturn]] void malformed(const std::string& path, size_t line, const std::string& what) {
  detail::throw_value(kTag, path + ":" + std::to_string(line) + ": " + detail::shorten(what, 300));
}

using ember::detail::exact_decimal;
using ember::detail::parse_exact;

Json json_number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// A JSON number, or null for NaN (what json_number writes for every non-finite value).
bool json_value(const Json& j, double& v) {
  if (j.is_null()) v = kNaN;
  else if (j.is_number()) v = j.get<double>();
  else return false;
  return true;
}

// "train.<metric>" then "valid.<metric>" columns, each in first-seen order over the history.
std::vector<std::string> metric_columns(const std::vector<EpochRecord>& history) {
  std::vector<std::string> cols;
  for (Split s : {Split::train, Split::valid})
    for (const auto& r : history)
      for (const auto& [name, v] : (s == Split::train ? r.train : r.valid)) {
        std::string col = std::string(split_name(s)) + "." + name;
        if (std::find(cols.begin(), cols.end(), col) == cols.end()) cols.push_back(col);
      }
  return cols;
}

// Adds `value` to the split named by `key` ("train.loss"); false for a key of neither split.
bool add_metric(EpochRecord& r, std::string_view key, double value) {
  for (Split s : {Split::train, Split::valid}) {
    std::string prefix = std::string(split_name(s)) + ".";
    if (key.size() > prefix.size() && key.substr(0, prefix.size()) == prefix) {
      (s == Split::train ? r.train : r.valid).emplace_back(key.substr(prefix.size()), value);
      return true;
    }
  }
  return false;
}

// RFC 4180 quoting, needed only for metric names holding commas or quotes.
std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

bool split_csv(std::string_view line, std::vector<std::string>& cells) {
  cells.assign(1, "");
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c != '"') cells.back() += c;
      else if (i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
      else quoted = false;
    } else if (c == '"' && cells.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return !quoted;
}

std::string to_csv(const std::vector<EpochRecord>& history) {
  std::vector<std::string> cols = metric_columns(history);
  for (const auto& c : cols)
    if (c.find_first_of("\r\n") != std::string::npos)
      detail::throw_value(kTag, "expected metric names without line breaks, found '" + c + "'");
  std::string out = "epoch,seconds";
  for (const auto& c : cols) out.append(",").append(csv_cell(c));
  out += '\n';
  std::vector<std::string> cells(cols.size());
  for (const auto& r : history) {
    std::fill(cells.begin(), cells.end(), std::string());
    for (Split s : {Split::train, Split::valid})
      for (const auto& [name, v] : (s == Split::train ? r.train : r.valid)) {
        std::string col = std::string(split_name(s)) + "." + name;
        cells[size_t(std::find(cols.begin(), cols.end(), col) - cols.begin())] = exact_decimal(v);
      }
    out += std::to_string(r.epoch) + "," + exact_decimal(r.seconds);
    for (const auto& c : cells) out += "," + c;
    out += '\n';
  }
  return out;
}

std::string to_jsonl(const std::vector<EpochRecord>& history) {
  std::string out;
  for (const auto& r : history) {
    Json j = {{"epoch", r.epoch}, {"seconds", json_number(r.seconds)}};
    for (const auto& [name, v] : r.train) j["train." + name] = json_number(v);
    for (const auto& [name, v] : r.valid) j["valid." + name] = json_number(v);
    out += dump(j) + "\n";
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<EpochRecord> from_csv(const std::string& path, const std::string& text) {
  std::vector<std::string> lines = lines_of(text), header, cells;
  std::vector<EpochRecord> history;
  if (lines.empty()) return history;
  if (!split_csv(lines[0], header) || header.size() < 2 || header[0] != "epoch" ||
      header[1] != "seconds")
    malformed(path, 1, "expected a header starting with epoch,seconds");
  EpochRecord probe;
  for (size_t c = 2; c < header.size(); ++c)
    if (!add_metric(probe, header[c], 0))
      malformed(path, 1, "expected train.<metric> or valid.<metric> columns, found '" +
                             header[c] + "'");
  for (size_t i = 1; i < lines.size(); ++i) {
    if (!split_csv(lines[i], cells) || cells.size() != header.size())
      malformed(path, i + 1, "expected " + std::to_string(header.size()) + " cells, found " +
                                 std::to_string(cells.size()));
    EpochRecord r;
    if (!parse_exact(cells[0], r.epoch)) malformed(path, i + 1, "bad epoch '" + cells[0] + "'");
    if (!parse_exact(cells[1], r.seconds))
      malformed(path, i + 1, "bad seconds '" + cells[1] + "'");
    for (size_t c = 2; c < cells.size(); ++c) {
      if (cells[c].empty()) continue;  // a metric this epoch did not have
      double v;
      if (!parse_exact(cells[c], v))
        malformed(path, i + 1, "bad value '" + cells[c] + "' for " + header[c]);
      add_metric(r, header[c], v);
    }
    history.push_back(std::move(r));
  }
  return history;
}

std::vector<EpochRecord> from_jsonl(const std::string& path, const std::string& text) {
  std::vector<EpochRecord> history;
  std::vector<std::string> lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    Json j = ember::detail::parse_json_bounded<Json>(lines[i], kMaxDepth);
    if (j.is_discarded()) malformed(path, i + 1, "invalid JSON (or nested too deep)");
    if (!j.is_object()) malformed(path, i + 1, "expected a JSON object");
    EpochRecord r;
    if (!j.contains("epoch") || !j["epoch"].is_number_integer())
      malformed(path, i + 1, "expected an integer \"epoch\"");
    for (const auto& [key, v] : j.items()) {
      double x;
      bool ok = key == "epoch" || (json_value(v, x) && (key == "seconds" ? (r.seconds = x, true)
                                                                        : add_metric(r, key, x)));
      if (!ok) malformed(path, i + 1, "unexpected entry \"" + key + "\": " + brief(v));
    }
    r.epoch = j["epoch"].get<int64_t>();
    history.push_back(std::move(r));
  }
  return history;
}

}  // namespace

LogFormat log_format_for(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) {
    return char(std::tolower(c));
  });
  if (ext == ".csv") return LogFormat::csv;
  if (ext == ".jsonl" || ext == ".json") return LogFormat::jsonl;
  detail::throw_value(kTag, "expected a .csv, .jsonl or .json path, found '" + path + "'");
}

void write_metric_log(const std::string& path, const std::vector<EpochRecord>& history) {
  LogFormat f = log_format_for(path);
  store::write_file_atomic(path, f == LogFormat::csv ? to_csv(history) : to_jsonl(history));
}

std::vector<EpochRecord> read_metric_log(const std::string& path) {
  LogFormat f = log_format_for(path);
  std::string text, error;
  if (!ember::detail::read_whole_file(path, kMaxLogBytes, text, error))
    throw store::IOError(store::detail::message(path, error));
  return f == LogFormat::csv ? from_csv(path, text) : from_jsonl(path, text);
}

std::string history_to_json(const std::vector<EpochRecord>& history) {
  Json out = Json::array();
  for (const auto& r : history) {
    Json train = Json::object(), valid = Json::object();
    for (const auto& [name, v] : r.train) train[name] = json_number(v);
    for (const auto& [name, v] : r.valid) valid[name] = json_number(v);
    out.push_back({{"epoch", r.epoch}, {"seconds", json_number(r.seconds)},
                   {"train", std::move(train)}, {"valid", std::move(valid)}});
  }
  return dump(out);
}

std::vector<EpochRecord> history_from_json(const std::string& json) {
  Json j = ember::detail::parse_json_bounded<Json>(json, kMaxDepth);
  auto bad = [](const std::string& what) {
    detail::throw_value(kTag, "malformed history JSON: " + detail::shorten(what, 300));
  };
  if (!j.is_array()) bad("expected an array of epochs");
  std::vector<EpochRecord> history;
  for (const Json& e : j) {
    EpochRecord& r = history.emplace_back();
    if (!e.is_object() || !e.contains("epoch") || !e["epoch"].is_number_integer() ||
        !e.contains("seconds") || !json_value(e["seconds"], r.seconds))
      bad("expected {\"epoch\": int, \"seconds\": number, ...}, found " + brief(e));
    r.epoch = e["epoch"].get<int64_t>();
    for (Split s : {Split::train, Split::valid}) {
      const char* key = s == Split::train ? "train" : "valid";
      if (!e.contains(key)) continue;
      if (!e[key].is_object()) bad(std::string("expected an object for \"") + key + "\"");
      for (const auto& [name, v] : e[key].items()) {
        double x;
        if (!json_value(v, x)) bad("expected a number for " + name + ", found " + brief(v));
        (s == Split::train ? r.train : r.valid).emplace_back(name, x);
      }
    }
  }
  return history;
}

}  // namespace ember::train

// The run's table and JSON document.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "run.h"

namespace ember::benchtool {
namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
nlohmann::json stats_json(const Stats& s) {
  if (s.n == 0) return {{"n", 0}};
  return {{"median_ms", s.median}, {"min_ms", s.min}, {"max_ms", s.max},
          {"q1_ms", s.q1},         {"q3_ms", s.q3},   {"n", s.n}};
}
}  // namespace

std::vector<const PeerResult*> peers_of(const RunRecord& run, const std::string& name) {
  std::vector<const PeerResult*> out;
  const std::string base = name.substr(0, name.find('@'));  // a pinned row's peer is the plain one
  for (const auto& p : run.peer_rows)
    if (p.stats.n > 0 && p.row.substr(0, p.row.find('[')) == base) out.push_back(&p);
  return out;
}

std::string run_table(const RunRecord& run) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-11s %-32s %-10s %10s %21s %4s  %-34s %10s %7s\n", "suite",
                "row", "device", "ember ms", "IQR (min-max)", "n", "peer row", "peer ms", "ratio");
  out += line;
  for (const auto& e : run.ember) {
    if (!e.error.empty()) {
      std::snprintf(line, sizeof line, "%-11s %-32s %-10s failed: %s\n", e.suite.c_str(),
                    e.name.c_str(), e.device.c_str(), e.error.c_str());
      out += line;
      continue;
    }
    const Stats& s = e.stats;
    const std::string spread = fmt("%.3g", s.q1) + "-" + fmt("%.3g", s.q3) + " (" +
                               fmt("%.3g", s.min) + "-" + fmt("%.3g", s.max) + ")";
    auto peers = peers_of(run, e.name);
    const PeerResult* best = nullptr;
    for (auto* p : peers)
      if (!best || p->stats.median < best->stats.median) best = p;
    std::vector<std::pair<std::string, const PeerResult*>> shown;
    for (auto* p : peers) shown.push_back({p->peer + ":" + p->row, p});
    if (peers.size() > 1) shown.push_back({"best (" + best->peer + ":" + best->row + ")", best});
    if (shown.empty()) shown.push_back({"-", nullptr});
    for (size_t i = 0; i < shown.size(); ++i) {
      const PeerResult* p = shown[i].second;
      // Continuation lines (more peer rows) show only the peer's columns.
      std::snprintf(line, sizeof line, "%-11s %-32s %-10s %10s %21s %4s  %-34s %10s %7s\n",
                    i ? "" : e.suite.c_str(), i ? "" : e.name.c_str(), i ? "" : e.device.c_str(),
                    i ? "" : fmt("%.4g", s.median).c_str(), i ? "" : spread.c_str(),
                    i ? "" : std::to_string(s.n).c_str(), shown[i].first.c_str(),
                    p ? fmt("%.4g", p->stats.median).c_str() : "-",
                    p ? fmt("%.3g", s.median / p->stats.median).c_str() : "-");
      out += line;
    }
  }
  return out;
}

std::string run_json(const RunRecord& run, const std::string& history) {
  using nlohmann::json;
  const Machine& m = run.machine;
  json doc = {
      {"schema", "ember-bench/run/1"},
      {"run_id", run.id ? json(run.id) : json(nullptr)},
      {"history", history.empty() ? json(nullptr) : json(history)},
      {"started", run.started},
      {"commit", run.commit},
      {"dirty", run.dirty},
      {"machine",
       {{"fingerprint", m.fingerprint},
        {"cpu_model", m.cpu_model},
        {"flags", m.flags},
        {"avx2", m.avx2},
        {"avx512", m.avx512},
        {"cores", m.cores},
        {"memory_gib", m.memory_gib},
        {"gpus", m.gpus},
        {"hostname", m.hostname}}},
      {"config",
       {{"suites", run.suites},
        {"devices", run.devices},
        {"peers", run.peers},
        {"rounds", run.rounds},
        {"threads", run.threads},
        {"clock", run.clock}}},
  };
  json results = json::array();
  for (const auto& e : run.ember) {
    json r = {{"suite", e.suite}, {"name", e.name}, {"device", e.device}};
    r.update(stats_json(e.stats));
    if (!e.error.empty()) r["error"] = e.error;
    if (e.flops > 0 && e.stats.n > 0) r["gflops"] = e.flops / e.stats.median / 1e6;
    json peers = json::array();
    for (auto* p : peers_of(run, e.name)) {
      json pj = {{"peer", p->peer}, {"row", p->row}};
      pj.update(stats_json(p->stats));
      if (e.stats.n > 0) pj["ratio"] = e.stats.median / p->stats.median;
      peers.push_back(pj);
    }
    r["peers"] = peers;
    results.push_back(r);
  }
  doc["results"] = results;
  json peer_rows = json::array();
  for (const auto& p : run.peer_rows) {
    json pj = {{"peer", p.peer}, {"row", p.row}, {"rounds", p.rounds}};
    pj.update(stats_json(p.stats));
    peer_rows.push_back(pj);
  }
  doc["peer_rows"] = peer_rows;
  return doc.dump(1) + "\n";
}

}  // namespace ember::benchtool

#include "report.h"

#include <cstdio>
#include <map>
#include <set>

#include "ember/store/atomic_file.h"
#include "ember/train/report.h"
#include "errors.h"
#include "history.h"

namespace ember::benchtool {
namespace {
std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// One row's history on one machine: per device, and per peer row, the (run id, median) points.
struct RowHistory {
  std::map<std::string, std::vector<std::pair<double, double>>> ember, peers;
  std::map<std::string, EmberResult> latest;  // per device
  int64_t latest_run = 0;
  std::map<std::string, double> latest_peer;  // peer:row -> median of the latest run that has it
};
}  // namespace

int report_command(const ReportOptions& o) {
  History h(o.history, /*create=*/false);
  const auto runs = h.runs();
  if (runs.empty()) throw ToolError(kUsage, "history " + o.history + " holds no runs yet");
  // machine -> suite -> row -> history
  std::map<std::string, std::map<std::string, std::map<std::string, RowHistory>>> all;
  std::map<std::string, Machine> machines;
  for (const auto& meta : runs) {
    if (meta.machine.fingerprint.rfind(o.machine, 0) != 0) continue;
    const RunRecord r = h.load(meta.id);
    machines[r.machine.fingerprint] = r.machine;
    auto& suites = all[r.machine.fingerprint];
    for (const auto& e : r.ember) {
      if ((!o.suite.empty() && e.suite != o.suite) || e.stats.n == 0) continue;
      RowHistory& rh = suites[e.suite][e.name];
      rh.ember[e.device].push_back({double(r.id), e.stats.median});
      rh.latest[e.device] = e;
      rh.latest_run = r.id;
      for (auto* p : peers_of(r, e.name)) {
        const std::string label = p->peer + ":" + p->row;
        auto& pts = rh.peers[label];
        if (pts.empty() || pts.back().first != double(r.id))
          pts.push_back({double(r.id), p->stats.median});
        rh.latest_peer[label] = p->stats.median;
      }
    }
  }
  if (all.empty())
    throw ToolError(kUsage, "history " + o.history + " has no results for the machine '" +
                                o.machine + "' and suite '" + o.suite + "'");

  // train::report_html's page and style, with this report's own content in place of its plots.
  std::string page = train::report_html("ember-bench history", {});
  page = page.substr(0, page.rfind("<p>No metrics."));
  page +=
      "<style>\ntable { border-collapse: collapse; margin: 0 0 24px 0; background: #fff; }\n"
      "td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }\n"
      "td:first-child, th:first-child { text-align: left; }\n</style>\n";
  page += "<p>" + std::to_string(runs.size()) + (runs.size() == 1 ? " run in " : " runs in ") +
          train::html_escape(o.history) +
          ". Times are medians in milliseconds per call (lower is better); the x axis is the run "
          "id; a ratio is ember's median over the peer row's.</p>\n";
  page +=
      "<h2>Runs</h2>\n<table><tr><th>run</th><th>started (UTC)</th><th>commit</th>"
      "<th>machine</th><th>suites</th><th>devices</th><th>peers</th><th>threads</th>"
      "<th>rounds</th></tr>\n";
  for (const auto& r : runs)
    page += "<tr><td>" + std::to_string(r.id) + "</td><td>" + train::html_escape(r.started) + "</td><td>" +
            train::html_escape(r.commit.substr(0, 12)) + (r.dirty ? "+dirty" : "") + "</td><td>" +
            train::html_escape(r.machine.fingerprint) + "</td><td>" + train::html_escape(r.suites.empty() ? "" : [&] {
              std::string s;
              for (const auto& x : r.suites) s += (s.empty() ? "" : ", ") + x;
              return s;
            }()) + "</td><td>" + std::to_string(r.devices.size()) + "</td><td>" +
            std::to_string(r.peers.size()) + "</td><td>" + std::to_string(r.threads) +
            "</td><td>" + std::to_string(r.rounds) + "</td></tr>\n";
  page += "</table>\n";
  for (const auto& [fp, suites] : all) {
    const Machine& m = machines[fp];
    page += "<h2>Machine " + train::html_escape(fp) + "</h2>\n<p>" + train::html_escape(m.cpu_model) + ", " +
            std::to_string(m.cores) + " cores, " + std::to_string(m.memory_gib) +
            " GiB, flags: " + train::html_escape(m.flags.empty() ? "none" : m.flags) +
            (m.gpus ? ", " + std::to_string(m.gpus) + " GPU(s)" : "") + "</p>\n";
    for (const auto& [suite, rows] : suites) {
      page += "<h3>Suite " + train::html_escape(suite) + "</h3>\n";
      for (const auto& [name, rh] : rows) {
        train::Plot plot{.title = name, .x_label = "run", .y_label = "ms per call"};
        for (const auto& [dev, pts] : rh.ember) plot.series.push_back({"ember " + dev, pts});
        for (const auto& [label, pts] : rh.peers) plot.series.push_back({label, pts});
        page += train::plot_svg(plot, 720, 300);
        page += "<table><tr><th>run " + std::to_string(rh.latest_run) +
                "</th><th>median</th><th>q1</th><th>q3</th><th>min</th><th>max</th><th>n</th>";
        for (const auto& [label, ms] : rh.latest_peer) page += "<th>/ " + train::html_escape(label) + "</th>";
        page += "</tr>\n";
        for (const auto& [dev, e] : rh.latest) {
          page += "<tr><td>ember " + train::html_escape(dev) + "</td><td>" + fmt(e.stats.median) + "</td><td>" +
                  fmt(e.stats.q1) + "</td><td>" + fmt(e.stats.q3) + "</td><td>" + fmt(e.stats.min) +
                  "</td><td>" + fmt(e.stats.max) + "</td><td>" + std::to_string(e.stats.n) +
                  "</td>";
          for (const auto& [label, ms] : rh.latest_peer)
            page += "<td>" + fmt(e.stats.median / ms) + "</td>";
          page += "</tr>\n";
        }
        page += "</table>\n";
      }
    }
  }
  page += "</body>\n</html>\n";
  try {
    store::write_file_atomic(o.out, page);
  } catch (const std::exception& e) {
    throw ToolError(kUsage, "cannot write the report " + o.out + ": " + e.what());
  }
  std::fprintf(stderr, "wrote %s\n", o.out.c_str());
  return 0;
}

}  // namespace ember::benchtool

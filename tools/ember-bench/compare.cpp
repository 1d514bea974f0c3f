#include "compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "errors.h"
#include "history.h"

namespace ember::benchtool {
namespace {
using Key = std::tuple<std::string, std::string, std::string>;  // machine, row, device

// The latest result of each (machine, row, device) over the runs a spec names.
std::map<Key, EmberResult> latest(History& h, const std::vector<int64_t>& ids,
                                  std::set<std::string>& commits) {
  std::map<Key, EmberResult> out;
  for (int64_t id : ids) {  // oldest first: a later run replaces an earlier one
    const RunRecord r = h.load(id);
    commits.insert(r.commit.substr(0, 12));
    for (const auto& e : r.ember)
      if (e.error.empty() && e.stats.n > 0) out[{r.machine.fingerprint, e.name, e.device}] = e;
  }
  return out;
}
std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ",") + x;
  return out;
}
}  // namespace

int compare_command(const CompareOptions& o) {
  if (o.threshold <= 0) throw ToolError(kUsage, "--threshold must be positive (0.1 is 10%)");
  History h(o.history, /*create=*/false);
  std::set<std::string> ca, cb;
  const auto a = latest(h, h.resolve(o.a), ca);
  const auto b = latest(h, h.resolve(o.b), cb);
  struct Row {
    Key key;
    const EmberResult *a, *b;
    double change;
    std::string verdict;
    bool overlap;
  };
  std::vector<Row> rows;
  for (const auto& [k, ea] : a) {
    auto it = b.find(k);
    if (it == b.end()) continue;
    const EmberResult& eb = it->second;
    const double change = eb.stats.median / ea.stats.median - 1;
    // A change beyond the threshold counts only when the interquartile ranges are apart: on a
    // loaded machine the medians of one code move by more than 10% from run to run.
    const bool overlap = eb.stats.q1 <= ea.stats.q3 && ea.stats.q1 <= eb.stats.q3;
    const bool beyond = std::abs(change) > o.threshold;
    const std::string verdict = !beyond      ? "same"
                                : overlap    ? "unclear"
                                : change > 0 ? "regression"
                                             : "improvement";
    rows.push_back({k, &ea, &eb, change, verdict, overlap});
  }
  if (rows.empty())
    throw ToolError(kUsage, "runs '" + o.a + "' and '" + o.b +
                                "' share no row measured on the same machine and device");
  std::sort(rows.begin(), rows.end(), [](auto& x, auto& y) { return x.change > y.change; });
  const int regressions = int(
      std::count_if(rows.begin(), rows.end(), [](auto& r) { return r.verdict == "regression"; }));
  if (o.json) {
    nlohmann::json doc = {{"schema", "ember-bench/compare/1"},
                          {"a", o.a},
                          {"b", o.b},
                          {"threshold", o.threshold},
                          {"regressions", regressions}};
    nlohmann::json rs = nlohmann::json::array();
    for (const auto& r : rows)
      rs.push_back({{"machine", std::get<0>(r.key)},
                    {"name", std::get<1>(r.key)},
                    {"device", std::get<2>(r.key)},
                    {"a_ms", r.a->stats.median},
                    {"b_ms", r.b->stats.median},
                    {"change", r.change},
                    {"verdict", r.verdict},
                    {"iqr_overlap", r.overlap}});
    doc["rows"] = rs;
    std::fputs((doc.dump(1) + "\n").c_str(), stdout);
  } else {
    std::printf("A = %s (commit %s), B = %s (commit %s), threshold %.0f%%\n", o.a.c_str(),
                join(ca).c_str(), o.b.c_str(), join(cb).c_str(), o.threshold * 100);
    std::printf("%-34s %-10s %-16s %10s %10s %8s  %s\n", "row", "device", "machine", "A ms", "B ms",
                "change", "verdict");
    for (const auto& r : rows)
      std::printf("%-34s %-10s %-16s %10.3f %10.3f %+7.1f%%  %s%s\n", std::get<1>(r.key).c_str(),
                  std::get<2>(r.key).c_str(), std::get<0>(r.key).c_str(), r.a->stats.median,
                  r.b->stats.median, r.change * 100, r.verdict.c_str(),
                  r.verdict == "unclear" ? " (beyond the threshold, within the spread)" : "");
    const int unclear = int(
        std::count_if(rows.begin(), rows.end(), [](auto& r) { return r.verdict == "unclear"; }));
    std::printf("%d regression%s beyond %.0f%% (%d change%s within the spread)\n", regressions,
                regressions == 1 ? "" : "s", o.threshold * 100, unclear, unclear == 1 ? "" : "s");
  }
  return regressions > 0 ? kRegression : 0;
}

}  // namespace ember::benchtool

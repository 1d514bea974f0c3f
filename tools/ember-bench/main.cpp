// ember-bench: ember's benchmark rows by suite on every device, beside the PyTorch peers in the
// same invocation, with a history of every run, comparisons between commits and an HTML report.
// docs/bench.md is the guide.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compare.h"
#include "ember/ember.h"
#include "errors.h"
#include "history.h"
#include "peers.h"
#include "report.h"
#include "run.h"

using namespace ember::benchtool;

namespace {
const char* const kUsageText =
    R"(usage: ember-bench [run] SUITE... [options]      run suites (or "all") beside their peers
       ember-bench list [--json]                      suites, rows, devices and peers
       ember-bench history [--history FILE] [--json]  the runs recorded
       ember-bench compare A B [--threshold 0.1] [--history FILE] [--json]
                                                      A's rows against B's (run ids or commits)
       ember-bench report [--history FILE] [-o FILE] [--suite S] [--machine FP]
                                                      the history as one HTML page
run options:
  --device D          a device: flex, cpu, cpu_eager, cuda, cuda_eager or all (default all;
                      repeatable, or comma-separated)
  --filter F          only rows whose name contains F (or one of its '|'-separated parts)
  --peer P            a peer script (path) or name from bench/peers (repeatable; default auto:
                      the suites' own peers); --no-peers runs none
  --rounds N          interleaved rounds of ember and the peers (default 3)
  --threads N         threads for ember and the peers (default $THREADS or 2)
  --warmup N          warm-up calls per row and round (default: the row's own, usually 3)
  --iters N           timed calls per row and round, at least (default: the row's own)
  --warmup-ms MS      and warm up for at least MS milliseconds (default 0)
  --min-time-ms MS    and keep timing until MS milliseconds of samples (default 0)
  --max-iters N       but at most N timed calls per row and round (default 1000)
  --clock wall|cpu    wall time (default) or the process's CPU time, on both sides
  --peer-timeout S    stop a peer that runs longer than S seconds (default 900)
  --history FILE      the SQLite history (default $EMBER_BENCH_HISTORY or
                      ember-bench-history.sqlite); --no-history records nothing
  --commit ID         record the run under ID instead of the commit the binary was built from
  --json              print the results as JSON on stdout (the table goes to stderr)
  -v, --verbose       print every row's median per round
exit status: 0 fine, 1 compare found a regression, 2 usage, 3 a peer failed, 4 history error,
5 some rows failed)";

std::string default_history() {
  const char* h = std::getenv("EMBER_BENCH_HISTORY");
  return h && *h ? h : "ember-bench-history.sqlite";
}

struct Args {
  std::vector<std::string> v;
  size_t i = 0;
  bool more() const { return i < v.size(); }
  std::string value(const std::string& flag) {
    if (i >= v.size()) throw ToolError(kUsage, flag + " needs a value");
    return v[i++];
  }
  int integer(const std::string& flag) {
    return parsed<int>(flag, "an integer",
                       [](const std::string& s, size_t* end) { return std::stoi(s, end); });
  }
  double number(const std::string& flag) {
    return parsed<double>(flag, "a number",
                          [](const std::string& s, size_t* end) { return std::stod(s, end); });
  }
  // The next value as a T, all of it (std::stoi alone would take "3x" as 3).
  template <class T, class F>
  T parsed(const std::string& flag, const char* what, F convert) {
    const std::string s = value(flag);
    try {
      size_t end = 0;
      const T x = convert(s, &end);
      if (end == s.size()) return x;
    } catch (const std::exception&) {
    }
    throw ToolError(kUsage, flag + ": expected " + what + ", found '" + s + "'");
  }
};

void split_into(const std::string& s, std::vector<std::string>& out) {
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
}

int list_command(Args& a) {
  bool json = false;
  while (a.more()) {
    const std::string f = a.value("");
    if (f == "--json")
      json = true;
    else
      throw ToolError(kUsage, "list: unknown option '" + f + "'");
  }
  nlohmann::json doc = {{"schema", "ember-bench/list/1"},
                        {"devices", ember::bench::available_devices()}};
  nlohmann::json suites = nlohmann::json::object();
  for (const auto& s : suite_names()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& w : ember::bench::workloads())
      if (ember::bench::suite_of(w) == s)
        rows.push_back({{"name", w.name},
                        {"gpu_only", w.gpu},
                        {"on_request", w.on_request},
                        {"warmup", w.warmup},
                        {"iters", w.iters}});
    suites[s] = {{"rows", rows}, {"peers", default_peers(s, true, true)}};
  }
  doc["suites"] = suites;
  nlohmann::json peers = nlohmann::json::array();
  for (const auto& p : known_peers()) peers.push_back({{"name", p.name}, {"path", p.path}});
  doc["peers"] = peers;
  if (json) {
    std::fputs((doc.dump(1) + "\n").c_str(), stdout);
    return 0;
  }
  std::printf("devices here: ");
  for (const auto& d : ember::bench::available_devices()) std::printf("%s ", d.c_str());
  std::printf("\n");
  for (const auto& [s, v] : suites.items()) {
    std::printf("\nsuite %s (default peers:", s.c_str());
    for (const auto& p : v["peers"]) std::printf(" %s", p.get<std::string>().c_str());
    std::printf(")\n");
    for (const auto& r : v["rows"])
      std::printf("  %-40s%s%s\n", r["name"].get<std::string>().c_str(),
                  r["gpu_only"].get<bool>() ? " (cuda only)" : "",
                  r["on_request"].get<bool>() ? " (on request: --filter NAME)" : "");
  }
  std::printf("\npeers:\n");
  for (const auto& p : known_peers()) std::printf("  %-24s %s\n", p.name.c_str(), p.path.c_str());
  return 0;
}

int history_command(Args& a) {
  std::string path = default_history();
  bool json = false;
  while (a.more()) {
    const std::string f = a.value("");
    if (f == "--history")
      path = a.value(f);
    else if (f == "--json")
      json = true;
    else
      throw ToolError(kUsage, "history: unknown option '" + f + "'");
  }
  History h(path, /*create=*/false);
  nlohmann::json doc = nlohmann::json::array();
  if (!json)
    std::printf("%5s  %-20s  %-14s %-16s %-24s %s\n", "run", "started", "commit", "machine",
                "suites", "devices");
  for (const auto& r : h.runs()) {
    std::string suites, devices;
    for (const auto& s : r.suites) suites += (suites.empty() ? "" : ",") + s;
    for (const auto& d : r.devices) devices += (devices.empty() ? "" : ",") + d;
    if (json)
      doc.push_back({{"run_id", r.id},
                     {"started", r.started},
                     {"commit", r.commit},
                     {"dirty", r.dirty},
                     {"machine", r.machine.fingerprint},
                     {"cpu_model", r.machine.cpu_model},
                     {"suites", r.suites},
                     {"devices", r.devices},
                     {"peers", r.peers},
                     {"threads", r.threads},
                     {"rounds", r.rounds},
                     {"clock", r.clock},
                     {"command", r.command}});
    else
      std::printf("%5lld  %-20s  %-14s %-16s %-24s %s\n", (long long)r.id, r.started.c_str(),
                  (r.commit.substr(0, 12) + (r.dirty ? "+" : "")).c_str(),
                  r.machine.fingerprint.c_str(), suites.c_str(), devices.c_str());
  }
  if (json) std::fputs((doc.dump(1) + "\n").c_str(), stdout);
  return 0;
}

int compare_main(Args& a) {
  CompareOptions o;
  o.history = default_history();
  std::vector<std::string> specs;
  while (a.more()) {
    const std::string f = a.value("");
    if (f == "--history")
      o.history = a.value(f);
    else if (f == "--threshold")
      o.threshold = a.number(f);
    else if (f == "--json")
      o.json = true;
    else if (!f.empty() && f[0] == '-' && f.size() > 1 && f[1] == '-')
      throw ToolError(kUsage, "compare: unknown option '" + f + "'");
    else
      specs.push_back(f);
  }
  if (specs.size() != 2)
    throw ToolError(kUsage, "compare needs two runs or commits, A and B (found " +
                                std::to_string(specs.size()) + ")");
  o.a = specs[0];
  o.b = specs[1];
  return compare_command(o);
}

int report_main(Args& a) {
  ReportOptions o;
  o.history = default_history();
  while (a.more()) {
    const std::string f = a.value("");
    if (f == "--history")
      o.history = a.value(f);
    else if (f == "-o" || f == "--out")
      o.out = a.value(f);
    else if (f == "--suite")
      o.suite = a.value(f);
    else if (f == "--machine")
      o.machine = a.value(f);
    else
      throw ToolError(kUsage, "report: unknown option '" + f + "'");
  }
  return report_command(o);
}

int run_main(Args& a, const std::string& command) {
  RunOptions o;
  o.command = command;
  o.history = default_history();
  o.peers = {"auto"};
  if (const char* t = std::getenv("THREADS")) o.threads = std::max(1, std::atoi(t));
  bool peers_given = false;
  while (a.more()) {
    const std::string f = a.value("");
    if (f == "--device")
      split_into(a.value(f), o.devices);
    else if (f == "--filter")
      o.filter = a.value(f);
    else if (f == "--peer") {
      if (!peers_given) o.peers.clear();
      peers_given = true;
      split_into(a.value(f), o.peers);
    } else if (f == "--no-peers") {
      o.peers.clear();
      peers_given = true;
    } else if (f == "--rounds")
      o.rounds = a.integer(f);
    else if (f == "--threads")
      o.threads = a.integer(f);
    else if (f == "--warmup")
      o.rules.warmup = a.integer(f);
    else if (f == "--iters")
      o.rules.iters = a.integer(f);
    else if (f == "--warmup-ms")
      o.rules.warmup_ms = a.number(f);
    else if (f == "--min-time-ms")
      o.rules.min_time_ms = a.number(f);
    else if (f == "--max-iters")
      o.rules.max_iters = a.integer(f);
    else if (f == "--clock") {
      const std::string c = a.value(f);
      if (c != "wall" && c != "cpu")
        throw ToolError(kUsage, "--clock: expected wall or cpu, found '" + c + "'");
      o.rules.cpu_clock = c == "cpu";
    } else if (f == "--peer-timeout")
      o.peer_timeout_s = a.number(f);
    else if (f == "--history")
      o.history = a.value(f);
    else if (f == "--no-history")
      o.history.clear();
    else if (f == "--commit")
      o.commit = a.value(f);
    else if (f == "--json")
      o.json = true;
    else if (f == "-v" || f == "--verbose")
      o.verbose = true;
    else if (!f.empty() && f[0] == '-')
      throw ToolError(kUsage, "unknown option '" + f + "'");
    else
      o.suites.push_back(f);
  }
  if (o.suites.empty() && !o.filter.empty()) o.suites = {"all"};
  if (o.threads < 1) throw ToolError(kUsage, "--threads must be at least 1");
  if (o.rules.max_iters < 1) throw ToolError(kUsage, "--max-iters must be at least 1");
  ember::set_num_threads(o.threads);
  return run_command(o);
}
}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::string command = "ember-bench";
  for (int i = 1; i < argc; ++i) {
    a.v.push_back(argv[i]);
    command += std::string(" ") + argv[i];
  }
  try {
    if (!a.more() || a.v[0] == "-h" || a.v[0] == "--help") {
      std::printf("%s\n", kUsageText);
      return a.more() ? 0 : kUsage;
    }
    const std::string cmd = a.v[0];
    if (cmd == "list") return ++a.i, list_command(a);
    if (cmd == "history") return ++a.i, history_command(a);
    if (cmd == "compare") return ++a.i, compare_main(a);
    if (cmd == "report") return ++a.i, report_main(a);
    if (cmd == "run") ++a.i;
    return run_main(a, command);
  } catch (const ToolError& e) {
    std::fprintf(stderr, "ember-bench: %s\n", e.what());
    return e.code;
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "ember-bench: %s\n", e.what());
    return kUsage;
  }
}

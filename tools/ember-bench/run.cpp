#include "run.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <set>

#include "ember/ember.h"
#include "errors.h"
#include "history.h"
#include "peers.h"

namespace ember::benchtool {
namespace {

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

bool is_cuda(const std::string& d) { return d.rfind("cuda", 0) == 0; }

// A row ember-bench runs. Rows pinned to a device (`name@cpu`, which set up their own tensors on
// it) run only when the filter names a pinned row ("@cpu", "matmul_f32_2048@cpu"), since every
// row already runs on every device; rows run only on request run when the filter is their name.
bool selected(const bench::Workload& w, const RunOptions& o, const std::set<std::string>& suites) {
  if (!suites.count("all") && !suites.count(bench::suite_of(w))) return false;
  if (!o.filter.empty() && !bench::matches(w.name, o.filter)) return false;
  if (w.on_request) return w.name == o.filter;
  if (w.name.find('@') != std::string::npos) return o.filter.find('@') != std::string::npos;
  return true;
}

std::vector<std::string> devices_of(const RunOptions& o) {
  const auto avail = bench::available_devices();
  if (o.devices.empty() || (o.devices.size() == 1 && o.devices[0] == "all")) return avail;
  for (const auto& d : o.devices) {
    if (!bench::known_device(d))
      throw ToolError(kUsage, "unknown device '" + d +
                                  "': expected all, flex, cpu, cpu_eager, cuda or cuda_eager");
    if (std::find(avail.begin(), avail.end(), d) == avail.end())
      throw ToolError(kUsage, "device '" + d +
                                  "' is not available here (this binary and machine have: " +
                                  join(avail) + ")");
  }
  return o.devices;
}
}  // namespace

std::vector<std::string> suite_names() {
  std::set<std::string> s;
  for (const auto& w : bench::workloads()) s.insert(bench::suite_of(w));
  return {s.begin(), s.end()};
}

std::vector<std::string> default_peers(const std::string& suite, bool host, bool cuda) {
  static const std::map<std::string, std::vector<std::string>> host_peers = {
      {"elementwise", {"torch_ops", "torch_models"}},
      {"reduce", {"torch_ops"}},
      {"matmul", {"torch_ops", "gemm"}},
      {"conv", {"torch_ops", "gemm"}},
      {"nn", {"torch_ops"}},
      {"train", {"torch_ops", "torch_models"}},
      {"models", {"torch_ops", "torch_models", "torch_text"}},
      {"autodiff", {"torch_autodiff"}},
      {"index", {"torch_index"}},
      {"store", {"torch_store"}},
      {"vision", {"torch_vision"}},
      {"onnx", {"onnxruntime"}},
  };
  static const std::map<std::string, std::vector<std::string>> gpu_peers = {
      {"gpu", {"torch_gpu"}}, {"cuda", {"torch_graphs"}}, {"elementwise", {"torch_gpu"}},
      {"nn", {"torch_gpu"}},  {"train", {"torch_gpu"}},   {"matmul", {"torch_gpu"}}};
  std::vector<std::string> out;
  if (host)
    if (auto it = host_peers.find(suite); it != host_peers.end()) out = it->second;
  if (cuda)
    if (auto it = gpu_peers.find(suite); it != gpu_peers.end())
      out.insert(out.end(), it->second.begin(), it->second.end());
  return out;
}

int run_command(const RunOptions& o) {
  const auto known = suite_names();
  if (o.suites.empty()) throw ToolError(kUsage, "name a suite to run: all, " + join(known));
  for (const auto& s : o.suites)
    if (s != "all" && std::find(known.begin(), known.end(), s) == known.end())
      throw ToolError(kUsage, "unknown suite '" + s + "': expected all, " + join(known));
  const std::set<std::string> suites(o.suites.begin(), o.suites.end());
  const auto devices = devices_of(o);
  if (o.rounds < 1) throw ToolError(kUsage, "--rounds must be at least 1");

  // Rows per device, in registration order.
  std::vector<const bench::Workload*> rows;
  std::set<std::string> row_suites;
  for (const auto& w : bench::workloads())
    if (selected(w, o, suites)) {
      rows.push_back(&w);
      row_suites.insert(bench::suite_of(w));
    }
  if (rows.empty())
    throw ToolError(kUsage, "no row of suite " + join(o.suites) +
                                (o.filter.empty() ? "" : " matches the filter '" + o.filter + "'"));

  // Peers: resolved (and so checked) before anything runs.
  const bool host =
      std::any_of(devices.begin(), devices.end(), [](auto& d) { return !is_cuda(d); });
  const bool cuda = std::any_of(devices.begin(), devices.end(), is_cuda);
  std::vector<std::string> specs;
  for (const auto& p : o.peers) {
    if (p != "auto") {
      specs.push_back(p);
      continue;
    }
    for (const auto& s : row_suites)
      for (const auto& d : default_peers(s, host, cuda)) specs.push_back(d);
  }
  std::vector<Peer> peers;
  for (const auto& s : specs) {
    Peer p = resolve_peer(s);
    if (std::none_of(peers.begin(), peers.end(), [&](auto& q) { return q.path == p.path; }))
      peers.push_back(p);
  }

  // The history is opened before the first round: an unwritable file fails now, not after.
  std::unique_ptr<History> history;
  if (!o.history.empty()) history = std::make_unique<History>(o.history);

  RunRecord run;
  run.started = utc_now();
  run.commit = o.commit.empty() ? build_commit() : o.commit;
  run.dirty = o.commit.empty() && build_dirty();
  run.machine = this_machine();
  run.threads = o.threads;
  run.rounds = o.rounds;
  run.clock = o.rules.cpu_clock ? "cpu" : "wall";
  run.suites = {row_suites.begin(), row_suites.end()};
  run.devices = devices;
  for (const auto& p : peers) run.peers.push_back(p.name);
  run.command = o.command;

  PeerEnv penv{
      .threads = o.threads, .clock = run.clock, .filter = o.filter, .timeout_s = o.peer_timeout_s};
  for (const auto* w : rows) penv.rows.push_back(w->name);

  // Results by (row, device) and (peer, row), filled round by round.
  std::map<std::pair<std::string, std::string>, EmberResult> ours;
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, PeerResult> theirs;
  auto run_ember = [&](int round) {
    std::fprintf(stderr, "[round %d/%d] ember: %zu rows on %s\n", round, o.rounds, rows.size(),
                 join(devices).c_str());
    for (const auto& dev : devices) {
      bench::select_device(dev);
      for (const auto* w : rows) {
        if (w->gpu && !is_cuda(dev)) continue;
        // A pinned row runs once, in the first device's pass, under the device it names.
        const size_t at = w->name.find('@');
        if (at != std::string::npos && dev != devices.front()) continue;
        const auto key =
            std::make_pair(w->name, at == std::string::npos ? dev : w->name.substr(at + 1));
        auto [it, fresh] = ours.try_emplace(key);
        if (fresh) {
          order.push_back(key);
          it->second = {.suite = bench::suite_of(*w),
                        .name = w->name,
                        .device = key.second,
                        .flops = w->flops};
        }
        if (!it->second.error.empty()) continue;  // failed in an earlier round
        const auto t = bench::time_row(*w, o.rules);
        if (!t.error.empty()) {
          it->second.error = t.error;
          std::fprintf(stderr, "[round %d/%d] %-8s %-34s failed: %s\n", round, o.rounds,
                       key.second.c_str(), w->name.c_str(), t.error.c_str());
          continue;
        }
        it->second.samples.insert(it->second.samples.end(), t.samples_ms.begin(),
                                  t.samples_ms.end());
        if (o.verbose)
          std::fprintf(stderr, "[round %d/%d] %-8s %-34s %10.3f ms\n", round, o.rounds,
                       key.second.c_str(), w->name.c_str(), summarize(t.samples_ms).median);
      }
    }
  };
  auto run_peers = [&](int round) {
    for (const auto& p : peers) {
      std::fprintf(stderr, "[round %d/%d] peer %s\n", round, o.rounds, p.name.c_str());
      std::map<std::string, double> got;
      try {
        got = run_peer(p, penv);
      } catch (const ToolError& e) {
        throw ToolError(e.code, std::string(e.what()) + "\nnothing was recorded in the history");
      }
      for (const auto& [row, ms] : got) {
        auto& r = theirs[{p.name, row}];
        r.peer = p.name;
        r.row = row;
        r.rounds.push_back(ms);
      }
    }
  };
  for (int r = 1; r <= o.rounds; ++r) {
    // Every other round the peers go first, so that a drift in the machine's speed over the run
    // falls on both sides alike.
    if (r % 2 == 0) run_peers(r);
    run_ember(r);
    if (r % 2 == 1) run_peers(r);
  }
  for (const auto& key : order) {
    EmberResult e = ours[key];
    e.stats = summarize(e.samples);
    run.ember.push_back(std::move(e));
  }
  for (auto& [key, p] : theirs) {
    p.stats = summarize(p.rounds);
    run.peer_rows.push_back(p);
  }
  if (history) history->append(run);
  const std::string table = run_table(run);
  if (o.json) {
    std::fputs(table.c_str(), stderr);
    std::fputs(run_json(run, o.history).c_str(), stdout);
  } else {
    std::fputs(table.c_str(), stdout);
  }
  if (history)
    std::fprintf(stderr, "recorded as run %lld in %s (commit %.12s%s, machine %s)\n",
                 (long long)run.id, o.history.c_str(), run.commit.c_str(),
                 run.dirty ? "+dirty" : "", run.machine.fingerprint.c_str());
  const bool any_failed =
      std::any_of(run.ember.begin(), run.ember.end(), [](auto& e) { return !e.error.empty(); });
  return any_failed ? kRowsFailed : 0;
}

}  // namespace ember::benchtool

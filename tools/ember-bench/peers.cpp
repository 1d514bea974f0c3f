#include "peers.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "errors.h"

extern char** environ;

namespace ember::benchtool {
namespace fs = std::filesystem;
namespace {

std::string last_lines(const fs::path& log, size_t n) {
  std::ifstream in(log);
  std::deque<std::string> lines;
  for (std::string l; std::getline(in, l);) {
    lines.push_back(l);
    if (lines.size() > n) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += "\n  | " + l;
  return out;
}

// A fresh folder under $TMPDIR (or /tmp), removed when this goes out of scope.
struct TempDir {
  fs::path path;
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ember-bench-XXXXXX";
    if (!mkdtemp(tmpl.data()))
      throw ToolError(kPeerFailed, "cannot create a folder for a peer's output in " + tmpl + ": " +
                                       std::strerror(errno));
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// The peer running now: an interrupted ember-bench takes it (and its children, in the peer's own
// process group, which the terminal's Ctrl-C does not reach) down with it.
volatile sig_atomic_t g_peer_pid = 0;
void on_interrupt(int sig) {
  if (g_peer_pid > 0) kill(-g_peer_pid, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

fs::path exe_dir() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p.parent_path();
}
}  // namespace

std::vector<std::string> peer_dirs() {
  std::vector<std::string> dirs;
  if (const char* p = std::getenv("EMBER_BENCH_PEER_PATH")) {
    std::string s = p;
    for (size_t start = 0; start <= s.size();) {
      const size_t colon = std::min(s.find(':', start), s.size());
      if (colon > start) dirs.push_back(s.substr(start, colon - start));
      start = colon + 1;
    }
  }
  dirs.push_back(EMBER_SOURCE_DIR "/bench/peers");
  // The team's shared peers (torch_cpu.py, torch_gpu.py) sit in shared/peers beside the
  // checkout, or beside a folder above it (a worktree's).
  for (fs::path p = fs::path(EMBER_SOURCE_DIR).parent_path(); !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    if (fs::is_directory(p / "shared" / "peers", ec)) {
      dirs.push_back((p / "shared" / "peers").string());
      break;
    }
    if (p == p.parent_path()) break;
  }
  if (!exe_dir().empty())
    dirs.push_back((exe_dir().parent_path() / "share" / "ember" / "bench" / "peers").string());
  return dirs;
}

std::vector<Peer> known_peers() {
  std::vector<Peer> out;
  std::set<std::string> seen;
  for (const auto& d : peer_dirs()) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(d, ec)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string stem = f.stem().string();
      // *peer_common.py are helpers the peers share, not peers.
      const bool helper = stem.size() >= 11 && stem.compare(stem.size() - 11, 11, "peer_common") == 0;
      if (f.extension() != ".py" || helper || !seen.insert(stem).second) continue;
      out.push_back({stem, f.string()});
    }
  }
  return out;
}

Peer resolve_peer(const std::string& spec) {
  const bool is_path = spec.find('/') != std::string::npos ||
                       (spec.size() > 3 && spec.compare(spec.size() - 3, 3, ".py") == 0);
  if (is_path) {
    std::error_code ec;
    if (!fs::is_regular_file(spec, ec))
      throw ToolError(kUsage, "peer '" + spec + "': no such file");
    return {fs::path(spec).stem().string(), spec};
  }
  for (const auto& p : known_peers())
    if (p.name == spec || p.name == spec + "_peer") return p;
  std::vector<std::string> names;
  for (const auto& p : known_peers()) names.push_back(p.name);
  throw ToolError(kUsage, "unknown peer '" + spec + "': expected a script path or one of [" +
                              join(names, ", ") + "] (searched " + join(peer_dirs(), ", ") + ")");
}

std::map<std::string, double> run_peer(const Peer& peer, const PeerEnv& env) {
  TempDir out;
  const fs::path log = out.path / "peer.log";
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    bool ours = false;  // the variables set below replace the caller's
    for (const char* k : {"OUT=", "THREADS=", "BENCH_FILTER=", "BENCH_ROWS=", "BENCH_CLOCK="})
      ours = ours || kv.rfind(k, 0) == 0;
    if (!ours) vars.push_back(kv);
  }
  vars.push_back("OUT=" + out.path.string());
  vars.push_back("THREADS=" + std::to_string(env.threads));
  vars.push_back("BENCH_FILTER=" + env.filter);
  vars.push_back("BENCH_ROWS=" + join(env.rows, ","));
  vars.push_back("BENCH_CLOCK=" + env.clock);
  const char* py = std::getenv("EMBER_BENCH_PYTHON");
  std::vector<std::string> args;
  if (fs::path(peer.path).extension() == ".py") args.push_back(py && *py ? py : "/usr/bin/python3");
  args.push_back(peer.path);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) throw ToolError(kPeerFailed, "peer " + peer.name + ": fork failed");
  if (pid == 0) {
    setpgid(0, 0);  // its own process group: a timeout ends the peer and its children
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    execve(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  g_peer_pid = pid;
  signal(SIGINT, on_interrupt);
  signal(SIGTERM, on_interrupt);
  signal(SIGHUP, on_interrupt);
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      g_peer_pid = 0;
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >
        env.timeout_s) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      g_peer_pid = 0;
      throw ToolError(kPeerFailed, "peer " + peer.name + " (" + peer.path + ") ran past " +
                                       std::to_string(int(env.timeout_s)) + " s and was stopped" +
                                       last_lines(log, 5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFSIGNALED(status))
    throw ToolError(kPeerFailed, "peer " + peer.name + " (" + peer.path + ") died of signal " +
                                     std::to_string(WTERMSIG(status)) + " (" +
                                     strsignal(WTERMSIG(status)) + ")" + last_lines(log, 5));
  if (WEXITSTATUS(status) != 0)
    throw ToolError(kPeerFailed, "peer " + peer.name + " (" + peer.path + ") exited with status " +
                                     std::to_string(WEXITSTATUS(status)) + last_lines(log, 5));
  std::map<std::string, double> rows;
  bool any_json = false;
  for (const auto& e : fs::directory_iterator(out.path)) {
    if (e.path().extension() != ".json") continue;
    any_json = true;
    nlohmann::json j;
    try {
      std::ifstream in(e.path());
      j = nlohmann::json::parse(in);
    } catch (const std::exception& ex) {
      throw ToolError(kPeerFailed, "peer " + peer.name + " wrote " + e.path().filename().string() +
                                       ", which is not JSON: " + ex.what());
    }
    if (!j.is_object())
      throw ToolError(kPeerFailed, "peer " + peer.name + ": expected a JSON object of rows in " +
                                       e.path().filename().string() + ", found " + j.type_name());
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_number())
        throw ToolError(kPeerFailed, "peer " + peer.name + ": row '" + it.key() +
                                         "' is not a number of milliseconds");
      rows[it.key()] = it.value().get<double>();
    }
  }
  if (!any_json)
    throw ToolError(kPeerFailed, "peer " + peer.name + " (" + peer.path +
                                     ") exited cleanly but wrote no JSON rows to $OUT" +
                                     last_lines(log, 5));
  return rows;
}

}  // namespace ember::benchtool

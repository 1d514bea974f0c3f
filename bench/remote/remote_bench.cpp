// The remote device side by side with local flex, on loopback (docs/remote.md, "Speed"):
//   ember_remote_bench chain    [--runs N] [--ops N]   a chain of elementwise ops and one read
//   ember_remote_bench transfer [--runs N] [--mib N]   upload and download, ws:// and wss://
//   ember_remote_bench soak     --server PATH [--seconds S] [--clients N]
// chain and transfer serve from an in-process flex server; each run measures local flex in the
// same run, so the ratio holds on a loaded machine. soak starts `ember-server` (PATH) as its own
// process, runs N clients doing random op chains, uploads, downloads and disconnects for S
// seconds (each client a process of its own), samples the server's resident memory every second
// and fails when it grows.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ember/backends/remote/transport.h"
#include "ember/ember.h"
#include "ember/remote.h"
#include "remote/remote_util.h"

using namespace ember;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Args {
  std::string mode = "all", server;
  int runs = 7, ops = 2000, mib = 256, clients = 16;
  double seconds = 60;
};

// `ops` elementwise ops on 16 floats, then one read (the read waits for all of them).
double chain_ms(Device d, int ops) {
  Tensor x = ones({16}, {kF32, d});
  synchronize(d);
  const auto t0 = Clock::now();
  for (int i = 0; i < ops / 2; ++i) x = x * 1.0001f + 0.0001f;
  (void)x.sum().item<float>();
  return ms_since(t0);
}

int chain(const Args& a) {
  test::LoopbackServer s;
  const Device r = remote::connect(s.url("/bench"));
  chain_ms(Device::flex(), a.ops), chain_ms(r, a.ops);  // warm up both
  std::vector<double> local, rem, ratio;
  for (int k = 0; k < a.runs; ++k) {
    local.push_back(chain_ms(Device::flex(), a.ops));
    rem.push_back(chain_ms(r, a.ops));
    ratio.push_back(rem.back() / local.back());
    std::printf("run %d: remote %.3f ms, local flex %.3f ms, ratio %.2f\n", k, rem.back(),
                local.back(), ratio.back());
  }
  std::printf("chain of %d ops + one read, median of %d: remote %.3f ms (%.2f us/op), local flex "
              "%.3f ms, ratio %.2f (median of per-run ratios %.2f)\n",
              a.ops, a.runs, median(rem), median(rem) * 1e3 / a.ops, median(local),
              median(rem) / median(local), median(ratio));
  return 0;
}

void transfer_on(const std::string& what, Device r, int runs, int mib) {
  const int64_t n = int64_t(mib) << 18;  // f32
  Tensor host = arange(n, {kF32});
  std::vector<double> up, down;
  for (int k = 0; k < runs; ++k) {
    auto t0 = Clock::now();
    Tensor t = host.to(r);
    synchronize(r);
    up.push_back(ms_since(t0));
    t0 = Clock::now();
    Tensor back = t.to(Device::flex());
    down.push_back(ms_since(t0));
    if (k == 0 && !allclose(back, host)) std::printf("%s: the download differs\n", what.c_str());
  }
  const double bytes = double(n) * 4;
  auto rate = [&](double ms) { return bytes / (ms * 1e-3) / 1e9; };
  std::printf("%s %d MiB, median of %d: upload %.0f ms (%.2f GB/s), download %.0f ms (%.2f GB/s)\n",
              what.c_str(), mib, runs, median(up), rate(median(up)), median(down),
              rate(median(down)));
}

int transfer(const Args& a) {
  // Local: what one copy of the bytes costs here (the floor for each end's copies).
  {
    const int64_t n = int64_t(a.mib) << 18;
    Tensor x = arange(n, {kF32});
    std::vector<double> t;
    for (int k = 0; k < a.runs; ++k) {
      const auto t0 = Clock::now();
      Tensor y = x.clone();
      t.push_back(ms_since(t0));
    }
    std::printf("local clone %d MiB, median of %d: %.0f ms (%.2f GB/s)\n", a.mib, a.runs,
                median(t), double(n) * 4 / (median(t) * 1e-3) / 1e9);
  }
  {
    test::LoopbackServer s;
    transfer_on("ws://", remote::connect(s.url("/plain")), a.runs, a.mib);
  }
  const test::SelfSigned cert = test::make_self_signed();
  remote::ServerOptions o;
  o.cert_pem = cert.cert_pem;
  o.key_pem = cert.key_pem;
  test::LoopbackServer s(o);
  transfer_on("wss://", remote::connect(s.url("/tls"), {.ca_pem = cert.cert_pem}), a.runs, a.mib);
  return 0;
}

// --- soak ---

long rss_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// Counters the client processes share with the parent.
struct Counts {
  long ops, wrong, connections, failed;
};

// One client (a process of its own: a process keeps at most 256 connections): connects, runs
// random chains, uploads and downloads with checked results, and now and then drops its
// connection mid-stream and opens a fresh one (while it has connections to spare).
void soak_client(const std::string& url, int id, Clock::time_point end, Counts* counts) {
  std::mt19937 rng(uint32_t(id) * 7919u + 1);
  auto add = [](long& c, long n = 1) { __atomic_fetch_add(&c, n, __ATOMIC_RELAXED); };
  for (int opened = 0; Clock::now() < end;) {
    Device d;
    try {
      d = remote::connect(url + "/soak" + std::to_string(id) + "_" + std::to_string(opened++),
                          {.timeout_s = 10});
      add(counts->connections);
    } catch (const DeviceError&) {
      add(counts->failed);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const bool may_drop = opened < 200;
    const int rounds = may_drop ? 5 + int(rng() % 40) : 1 << 30;
    try {
      for (int k = 0; k < rounds && Clock::now() < end; ++k) {
        const int64_t n = int64_t(1) << (4 + rng() % 14);  // 16 .. 128 Ki floats
        switch (rng() % 4) {
          case 0: {  // a random elementwise chain, checked against flex
            Tensor x = randn({n}), w = x.to(d);
            for (int i = 0, len = 10 + int(rng() % 200); i < len; ++i) {
              switch (rng() % 4) {
                case 0: x = x * 0.5f + 1, w = w * 0.5f + 1; break;
                case 1: x = relu(x - 0.25f), w = relu(w - 0.25f); break;
                case 2: x = x.exp().clamp(-4, 4), w = w.exp().clamp(-4, 4); break;
                default: x = tanh(x), w = tanh(w); break;
              }
              add(counts->ops);
            }
            if (!allclose(w.to(Device::flex()), x)) add(counts->wrong);
            break;
          }
          case 1: {  // upload, reduce on the server, read one number
            Tensor x = full({n}, float(id), {kF32});
            if (x.to(d).sum().item<float>() != float(id) * float(n)) add(counts->wrong);
            add(counts->ops);
            break;
          }
          case 2: {  // a round trip of bytes
            Tensor x = arange(n, {kI32});
            if (!equal(x.to(d).to(Device::flex()), x)) add(counts->wrong);
            break;
          }
          default: {  // tensors left for the server to free when the connection goes
            Tensor keep = ones({n}, {kF32, d}) * 3;
            if (rng() % 2 && may_drop) {
              remote::disconnect(d);  // mid-stream: the server frees the session
              k = rounds;
            }
            break;
          }
        }
      }
    } catch (const DeviceError&) {
      // the connection this client dropped
    }
    if (remote::connected(d) && may_drop) remote::disconnect(d);
  }
}

int soak(const Args& a) {
  if (a.server.empty()) {
    std::cerr << "soak needs --server PATH (build/tools/ember-server)\n";
    return 2;
  }
  int out[2];
  if (pipe(out) != 0) return 1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    execl(a.server.c_str(), a.server.c_str(), "--port", "0", "--quiet", (char*)nullptr);
    _exit(127);
  }
  close(out[1]);
  FILE* f = fdopen(out[0], "r");
  char line[256] = {};
  if (!fgets(line, sizeof line, f)) {
    std::cerr << "the server did not start\n";
    return 1;
  }
  const std::string l = line;
  const std::string url = "ws://127.0.0.1:" + l.substr(l.rfind(':') + 1, l.find_last_not_of("\n") - l.rfind(':'));
  auto* counts = static_cast<Counts*>(
      mmap(nullptr, sizeof(Counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  *counts = {};
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::milliseconds(int64_t(a.seconds * 1000));
  std::vector<pid_t> clients;
  for (int c = 0; c < a.clients; ++c) {
    const pid_t p = fork();
    if (p == 0) {
      soak_client(url, c, end, counts);
      std::fflush(stdout);
      _exit(0);
    }
    clients.push_back(p);
  }
  std::vector<long> rss;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rss.push_back(rss_kib(pid));
    std::printf("t=%4.0f s  server RSS %ld KiB  ops %ld  connections %ld (%ld refused)\n",
                ms_since(t0) / 1e3, rss.back(), counts->ops, counts->connections, counts->failed);
    std::fflush(stdout);
  }
  bool clients_ok = true;
  for (pid_t p : clients) {
    int st = 0;
    waitpid(p, &st, 0);
    clients_ok = clients_ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  const long ops = counts->ops, wrong = counts->wrong, reconnects = counts->connections;
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  // Flat: after a warm-up (the first quarter), the last samples stay within 10% (+8 MiB) of the
  // warm-up's peak.
  const size_t warm = std::max<size_t>(1, rss.size() / 4);
  const long warm_peak = *std::max_element(rss.begin(), rss.begin() + long(warm));
  const long late_peak = *std::max_element(rss.begin() + long(warm), rss.end());
  const bool flat = late_peak <= warm_peak + warm_peak / 10 + 8192;
  std::printf("soak %d clients %.0f s: %ld ops, %ld connections, %ld wrong results; server RSS "
              "after warm-up %ld KiB, peak later %ld KiB, last %ld KiB: %s; server exit %d\n",
              a.clients, a.seconds, ops, reconnects, wrong, warm_peak, late_peak, rss.back(),
              flat ? "flat" : "GROWING", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return flat && wrong == 0 && clients_ok && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (s == "--runs") a.runs = std::stoi(next());
    else if (s == "--ops") a.ops = std::stoi(next());
    else if (s == "--mib") a.mib = std::stoi(next());
    else if (s == "--seconds") a.seconds = std::stod(next());
    else if (s == "--clients") a.clients = std::stoi(next());
    else if (s == "--server") a.server = next();
    else if (s[0] != '-') a.mode = s;
    else {
      std::cerr << "usage: ember_remote_bench [chain|transfer|soak|all] [--runs N] [--ops N] "
                   "[--mib N] [--seconds S] [--clients N] [--server PATH]\n";
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  int rc = 0;
  if (a.mode == "chain" || a.mode == "all") rc |= chain(a);
  if (a.mode == "transfer" || a.mode == "all") rc |= transfer(a);
  if (a.mode == "soak") rc |= soak(a);
  return rc;
}

#include "ember/backends/cpu/jit/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace ember::cpu::jit {
namespace {

using Clock = std::chrono::steady_clock;

// The parent's environment with `overrides` ("NAME=value") replacing entries of the same name.
std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    bool replaced = std::any_of(overrides.begin(), overrides.end(), [&](const std::string& o) {
      size_t eq = o.find('=');
      return entry.size() > eq && entry.substr(0, eq + 1) == std::string_view(o).substr(0, eq + 1);
    });
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Owns the spawn attribute objects so every exit path destroys them.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup(int out_fd) {
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
    posix_spawnattr_init(&attr);
    // Its own process group, so a timeout kills the driver and the compilers it started.
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

}  // namespace

std::string ProcessResult::describe() const {
  if (!started) return "could not be started: " + error;
  if (timed_out) return "timed out after " + std::to_string(int64_t(seconds * 1000)) + " ms";
  if (cancelled) return "was cancelled";
  if (signal != 0) {
    std::string s = "killed by signal " + std::to_string(signal);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
    if (const char* d = sigdescr_np(signal)) s += std::string(" (") + d + ")";
#endif
    return s;
  }
  return "exited with status " + std::to_string(exit_code);
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult r;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.timeout_s));
  Fd rd, wr;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  rd.fd = fds[0];
  wr.fd = fds[1];

  std::vector<std::string> args = argv, env = child_environment(options.env);
  std::vector<char*> cargs = c_strings(args), cenv = c_strings(env);
  pid_t pid = -1;
  int rc;
  {
    SpawnSetup setup(wr.fd);
    rc = posix_spawn(&pid, cargs[0], &setup.actions, &setup.attr, cargs.data(), cenv.data());
  }
  wr.close();  // the child holds the only write end now: EOF comes when it (and its children) exit
  if (rc != 0) {
    r.error = argv[0] + ": " + std::strerror(rc);
    return r;
  }
  r.started = true;

  bool eof = false;
  int status = 0;
  char buf[4096];
  auto keep = [&](ssize_t n) {
    size_t room = options.max_output - std::min(options.max_output, r.output.size());
    r.output.append(buf, std::min(size_t(n), room));
  };
  for (;;) {
    if (!eof) {
      pollfd p{rd.fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) {
        ssize_t n = ::read(rd.fd, buf, sizeof buf);
        if (n > 0) keep(n);
        if (n == 0 || (n < 0 && errno != EINTR)) eof = true;
      }
    } else {
      ::usleep(2000);  // the output closed but the child has not exited yet
    }
    // Exited? Look without reaping: the zombie keeps its process group id reserved until then.
    siginfo_t info{};
    int w = ::waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (w == 0 && info.si_pid == pid) break;
    if (w < 0 && errno == ECHILD) {  // a SIGCHLD handler of the program's reaped it first
      r.started = false;
      r.error = "its exit status was collected elsewhere (a SIGCHLD handler?)";
      return r;  // its group id may be free again: signalling it could hit a stranger
    }
    bool cancel = options.cancel && options.cancel->load(std::memory_order_relaxed);
    if (cancel || Clock::now() >= deadline) {
      (cancel ? r.cancelled : r.timed_out) = true;
      break;
    }
  }
  // Kill whatever of the group is still running (all of it on a timeout; a child that outlived
  // the driver otherwise), then reap the driver: no compiler left running, no zombie left behind.
  ::kill(-pid, SIGKILL);
  if (r.timed_out || r.cancelled) ::kill(pid, SIGKILL);  // even if it left the group
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // What it wrote just before exiting (bounded, non-blocking: nothing can hold this up).
  ::fcntl(rd.fd, F_SETFL, O_NONBLOCK);
  for (int i = 0; !eof && i < 256; ++i) {
    ssize_t n = ::read(rd.fd, buf, sizeof buf);
    if (n <= 0) break;
    keep(n);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!r.timed_out && !r.cancelled) {
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  }
  return r;
}

std::string find_program(const std::string& name) {
  auto executable = [](const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return executable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (executable(candidate)) return candidate;
    if (colon == std::string_view::npos) return "";
    rest.remove_prefix(colon + 1);
  }
}

}  // namespace ember::cpu::jit

// The dashboard's terminal side: the alternate screen, raw keys, a drawing thread, pause, and
// giving the terminal back however the program ends. The model and the layout are
// dashboard_view.cpp; this file only moves events in and frames out.
//
// Threads: the training thread calls the Renderer events, which update the model under a mutex
// and return at once (or wait while paused); a drawing thread polls the keys and a wake-up pipe,
// and at most every min_interval_s renders a frame and writes the rows that changed.
#include "ember/train/dashboard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/error.h"
#include "ember/train/detail/dashboard_view.h"

namespace ember::train {
namespace {

using detail::DashboardModel;
using detail::Mode;

constexpr const char* kEnter = "\x1b[?1049h\x1b[?25l\x1b[2J\x1b[H";
constexpr const char* kLeave = "\x1b[0m\x1b[?25h\x1b[?1049l";

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;  // the terminal went away: nothing more to show
    p += k;
    n -= size_t(k);
  }
}
void write_str(int fd, const char* s) { write_all(fd, s, std::char_traits<char>::length(s)); }

// The terminal as the signal handlers, atexit and std::terminate see it. Everything they touch
// is async-signal-safe: write(2), tcsetattr(3) and atomics.
struct Terminal {
  std::atomic<bool> active{false};  // the alternate screen is up
  int out_fd = 1, in_fd = -1;       // in_fd >= 0: raw mode was set on it
  termios saved{}, raw{};
  int wake_fd = -1;  // the drawing thread's pipe
  std::atomic<int> sigints{0};
  std::atomic<bool> resized{false}, repaint{false};
  struct sigaction previous[NSIG];
  bool installed[NSIG] = {};
  std::terminate_handler previous_terminate = nullptr;
};
Terminal g_term;
std::atomic<bool> g_in_use{false};  // one dashboard owns the terminal at a time

void leave_screen() {
  if (!g_term.active.exchange(false)) return;
  if (g_term.in_fd >= 0) ::tcsetattr(g_term.in_fd, TCSANOW, &g_term.saved);
  write_str(g_term.out_fd, kLeave);
}

void enter_screen() {
  if (g_term.active.exchange(true)) return;
  if (g_term.in_fd >= 0) ::tcsetattr(g_term.in_fd, TCSANOW, &g_term.raw);
  write_str(g_term.out_fd, kEnter);
  g_term.repaint = true;
}

void wake() {
  if (g_term.wake_fd >= 0) {
    const char c = 1;
    [[maybe_unused]] ssize_t k = ::write(g_term.wake_fd, &c, 1);
  }
}

// Hands `sig` to what was installed before the dashboard; the default action runs with the
// terminal restored.
void pass_on(int sig, siginfo_t* info, void* ctx) {
  const struct sigaction& prev = g_term.previous[sig];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, ctx);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler != SIG_DFL) {
    prev.sa_handler(sig);
    return;
  }
  leave_screen();
  ::sigaction(sig, &prev, nullptr);
  ::raise(sig);  // delivered when this handler returns, with the default action
}

extern "C" void on_signal(int sig, siginfo_t* info, void* ctx) {
  const int saved_errno = errno;
  switch (sig) {
    case SIGWINCH:
      g_term.resized = true;
      wake();
      break;
    case SIGCONT:  // after a stop (Ctrl-Z, or SIGSTOP): take the terminal back
      if (g_term.active && g_term.in_fd >= 0) ::tcsetattr(g_term.in_fd, TCSANOW, &g_term.raw);
      g_term.repaint = true;
      wake();
      break;
    case SIGTSTP: {
      leave_screen();
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      ::sigaction(SIGTSTP, &dfl, nullptr);
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGTSTP);
      ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
      ::raise(SIGTSTP);  // stops here; continues below on SIGCONT
      struct sigaction sa {};
      sa.sa_sigaction = on_signal;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      ::sigaction(SIGTSTP, &sa, nullptr);
      enter_screen();
      wake();
      break;
    }
    case SIGINT:
      // The first one asks to stop (the Learner's own handler, passed on, does the same); when
      // it is the second, or nothing catches it, the program dies: restore the terminal first.
      if (g_term.sigints.fetch_add(1) >= 1) leave_screen();
      wake();
      pass_on(sig, info, ctx);
      break;
    default:  // SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV
      leave_screen();
      if (g_term.installed[sig]) ::sigaction(sig, &g_term.previous[sig], nullptr);
      g_term.installed[sig] = false;
      if (sig == SIGSEGV) break;  // the fault repeats on return, with the old action
      ::raise(sig);
      break;
  }
  errno = saved_errno;
}

constexpr int kSignals[] = {SIGINT,  SIGTERM,  SIGHUP,  SIGQUIT, SIGABRT,
                            SIGSEGV, SIGWINCH, SIGTSTP, SIGCONT};

void install_signals() {
  for (int sig : kSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    g_term.installed[sig] = ::sigaction(sig, &sa, &g_term.previous[sig]) == 0;
  }
}

void remove_signals() {
  for (int sig : kSignals) {
    if (!g_term.installed[sig]) continue;
    g_term.installed[sig] = false;
    // Only when ours is still the action: a handler installed after ours (or the Learner's,
    // restored as it finished) stays.
    struct sigaction now {};
    ::sigaction(sig, nullptr, &now);
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_signal)
      ::sigaction(sig, &g_term.previous[sig], nullptr);
  }
}

void on_terminate() {
  leave_screen();  // so the "terminate called after ..." text lands on the normal screen
  if (g_term.previous_terminate) g_term.previous_terminate();
  std::abort();
}

double wall_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

class Dashboard final : public Renderer {
 public:
  explicit Dashboard(DashboardOptions o) : o_(o) {}
  ~Dashboard() override { stop_thread(/*summary=*/false); }

  void on_fit_start(const FitInfo& info) override {
    stop_thread(false);
    {
      std::lock_guard lk(mu_);
      model_ = DashboardModel();
      model_.fit_start(info, active_now());
      gpu_ = info.gpu;
      epochs_ = info.epochs;
      log_.clear();
      stop_ = false;
      paused_ = false;
    }
    start_thread();
  }

  void on_progress(const Progress& p) override {
    std::unique_lock lk(mu_);
    model_.progress(p, active_now());
    // Paused: the step is done; the next waits here, while the drawing thread keeps drawing.
    if (paused_) cv_.wait(lk, [&] { return !paused_ || stop_ || !running_; });
  }

  void on_epoch_end(const EpochRecord& r) override {
    std::lock_guard lk(mu_);
    model_.epoch_end(r);
    log_.push_back(format_epoch(r, epochs_));
  }

  void on_message(std::string_view text) override {
    std::lock_guard lk(mu_);
    model_.message(std::string(text));
    log_.emplace_back(text);
  }

  void on_fit_end() override { stop_thread(o_.summary); }

  bool stop_requested() override {
    if (g_term.sigints.load(std::memory_order_relaxed) > seen_sigints_) stop_ = true;
    return stop_.load(std::memory_order_relaxed);
  }

 private:
  // Seconds that stand still while paused.
  double active_now() const {
    double now = wall_now() - paused_total_;
    return paused_ ? paused_since_ - paused_total_ : now;
  }

  void start_thread() {
    if (g_in_use.exchange(true)) {  // another dashboard has the terminal: draw nothing
      owner_ = false;
      return;
    }
    owner_ = true;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) fds[0] = fds[1] = -1;
    wake_r_ = fds[0];
    g_term.wake_fd = fds[1];
    g_term.out_fd = o_.out_fd;
    g_term.in_fd = -1;
    keys_ = o_.in_fd >= 0 && ::isatty(o_.in_fd) && ::tcgetattr(o_.in_fd, &g_term.saved) == 0;
    if (keys_) {
      g_term.raw = g_term.saved;
      g_term.raw.c_lflag &= tcflag_t(~(ICANON | ECHO | IEXTEN));  // ISIG stays: Ctrl-C works
      g_term.raw.c_cc[VMIN] = 0;
      g_term.raw.c_cc[VTIME] = 0;
      g_term.in_fd = o_.in_fd;
    }
    g_term.sigints = 0;
    seen_sigints_ = 0;
    static std::once_flag at_exit;
    std::call_once(at_exit, [] { std::atexit(leave_screen); });
    g_term.previous_terminate = std::set_terminate(on_terminate);
    if (o_.handle_signals) install_signals();
    enter_screen();
    running_ = true;
    thread_ = std::thread([this] { loop(); });
  }

  void stop_thread(bool summary) {
    if (!owner_) return;
    {
      std::lock_guard lk(mu_);
      running_ = false;
      model_.set_mode(Mode::done);
    }
    cv_.notify_all();
    wake();
    if (thread_.joinable()) thread_.join();
    leave_screen();
    if (o_.handle_signals) remove_signals();
    std::set_terminate(g_term.previous_terminate);
    if (g_term.wake_fd >= 0) ::close(g_term.wake_fd);
    if (wake_r_ >= 0) ::close(wake_r_);
    g_term.wake_fd = wake_r_ = -1;
    owner_ = false;
    g_in_use = false;
    if (summary) {
      std::string out;
      for (const std::string& l : log_) out += l + "\n";
      write_all(o_.out_fd, out.data(), out.size());
    }
  }

  void loop() {
    double drawn_at = 0, sampled_at = -1, painted_at = wall_now();
    while (true) {
      pollfd fds[2] = {{wake_r_, POLLIN, 0}, {keys_ ? o_.in_fd : -1, POLLIN, 0}};
      ::poll(fds, 2, int(o_.min_interval_s * 1000) + 1);
      if (fds[0].revents & POLLIN) {
        char buf[64];
        while (::read(wake_r_, buf, sizeof buf) > 0) {
        }
      }
      if (fds[1].revents & POLLIN) {
        char buf[64];
        ssize_t n = ::read(o_.in_fd, buf, sizeof buf);
        if (n > 0) keys(std::string(buf, size_t(n)));
      } else if (fds[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
        keys_ = false;
      }
      {
        std::lock_guard lk(mu_);
        if (!running_) return;
        if (g_term.sigints.load() > seen_sigints_ && !stop_) {
          stop_ = true;  // Ctrl-C: the Learner stops after this step
          model_.set_mode(Mode::stopping);
          set_paused(false);
        }
      }
      const double now = wall_now();
      if (now - sampled_at >= 1.0) {
        try {
          sys_ = monitor_.sample(gpu_);
        } catch (const std::exception&) {  // /proc unreadable: the panel shows "?"
        }
        sampled_at = now;
      }
      // A whole repaint now and then also mends rows that other output (a print from the
      // training code) scribbled over.
      const bool full = g_term.resized.exchange(false) | g_term.repaint.exchange(false) |
                        (now - painted_at >= 5.0);
      if (full) painted_at = now;
      if (full || now - drawn_at >= o_.min_interval_s) {
        try {
          draw(full);
        } catch (const std::exception&) {  // out of memory, say: training goes on undrawn
        }
        drawn_at = now;
      }
    }
  }

  void set_paused(bool on) {  // under mu_
    if (on == paused_) return;
    const double now = wall_now();
    if (on) {
      paused_since_ = now;
    } else {
      paused_total_ += now - paused_since_;
    }
    paused_ = on;
    model_.set_mode(on ? Mode::paused : stop_ ? Mode::stopping : Mode::running);
    cv_.notify_all();
  }

  void keys(const std::string& in) {
    std::lock_guard lk(mu_);
    for (size_t i = 0; i < in.size(); ++i) {
      const char c = in[i];
      if (c == '\x1b' && i + 2 < in.size() && (in[i + 1] == '[' || in[i + 1] == 'O')) {
        const char k = in[i + 2];
        i += 2;
        if (k == 'C') model_.next_plot(1);
        if (k == 'D' || k == 'Z') model_.next_plot(-1);  // left, shift-tab
        if (k == 'A' || k == 'B') model_.toggle_view();
        continue;
      }
      switch (c) {
        case 'q':
        case 'Q':
          if (stop_) {  // the second q: quit now, as a second Ctrl-C does
            leave_screen();
            ::signal(SIGINT, SIG_DFL);
            ::raise(SIGINT);
          }
          stop_ = true;
          set_paused(false);
          model_.set_mode(Mode::stopping);
          model_.message("q: stopping after this step and saving a checkpoint (q again quits now)");
          break;
        case 'p':
        case 'P':
        case ' ':
          if (!stop_) set_paused(!paused_);
          break;
        case '\t':
          model_.next_plot(1);
          break;
        case 'e':
          model_.toggle_view();
          break;
        case '?':
        case 'h':
          model_.toggle_help();
          break;
        case '\x1b':
          if (model_.help()) model_.toggle_help();
          break;
        default:
          break;
      }
    }
    wake();
  }

  void draw(bool full) {
    if (!g_term.active) return;
    winsize ws{};
    int w = 80, h = 24;
    if (::ioctl(o_.out_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
      w = ws.ws_col;
      h = ws.ws_row;
    }
    // A copy is taken under the lock (about a tenth of a millisecond with full plots) and drawn
    // outside it, so a step that ends meanwhile does not wait for the frame.
    DashboardModel model;
    double now = 0;
    {
      std::lock_guard lk(mu_);
      model_.set_system(sys_);
      model = model_;
      now = active_now();
    }
    detail::Frame frame = model.render(w, h, now);
    if (!frame.empty() && !frame.back().empty())
      frame.back().pop_back();  // no scroll at the corner
    std::string out;
    if (full || w != drawn_w_ || h != drawn_h_) {
      out += "\x1b[2J";
      drawn_.clear();
    }
    drawn_w_ = w;
    drawn_h_ = h;
    drawn_.resize(frame.size());
    for (size_t r = 0; r < frame.size(); ++r) {
      std::string row = detail::row_ansi(frame[r]);
      if (row == drawn_[r]) continue;
      out += "\x1b[" + std::to_string(r + 1) + ";1H" + row;
      drawn_[r] = std::move(row);
    }
    if (!out.empty()) write_all(o_.out_fd, out.data(), out.size());
  }

  DashboardOptions o_;
  std::mutex mu_;
  std::condition_variable cv_;
  DashboardModel model_;
  std::vector<std::string> log_;  // epoch lines and messages, printed when the screen goes
  int64_t epochs_ = 0;
  int gpu_ = -1;
  detail::SystemMonitor monitor_;
  detail::SystemSample sys_;
  std::thread thread_;
  bool running_ = false, owner_ = false, keys_ = false;
  std::atomic<bool> stop_{false};
  bool paused_ = false;
  double paused_since_ = 0, paused_total_ = 0;
  int seen_sigints_ = 0;
  int wake_r_ = -1;
  std::vector<std::string> drawn_;  // the rows on screen
  int drawn_w_ = 0, drawn_h_ = 0;
};

}  // namespace

std::unique_ptr<Renderer> dashboard_renderer(DashboardOptions options) {
  if (!(options.min_interval_s >= 0))
    ember::detail::throw_value("dashboard_renderer", "expected min_interval_s >= 0, found " +
                                                         std::to_string(options.min_interval_s));
  return std::make_unique<Dashboard>(options);
}

}  // namespace ember::train

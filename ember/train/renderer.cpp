#include "ember/train/renderer.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "ember/error.h"
#include "ember/train/dashboard.h"

// The renderers depend on nothing but the events they get, so a fuller dashboard can implement
// the same interface and the Learner never knows which one it talks to.

namespace ember::train {
namespace {

std::string printf_str(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// "m:ss" or "h:mm:ss", as progress bars show elapsed time and ETA; "?" when unknown.
std::string format_clock(double seconds) {
  if (!std::isfinite(seconds) || seconds >= 1e15) return "?";  // int64 holds the rest exactly
  auto t = int64_t(std::floor(std::max(seconds, 0.0)));
  char buf[48];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(t / 3600),
                  (long long)(t / 60 % 60), (long long)(t % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)(t / 60), (long long)(t % 60));
  return buf;
}

std::string format_metrics(const MetricValues& ms) {
  std::string s;
  for (const auto& [name, v] : ms) {
    if (!s.empty()) s += ' ';
    s += format_metric(name, v);
  }
  return s;
}

std::string epoch_str(int64_t epoch, int64_t epochs) {
  std::string s = "epoch " + std::to_string(epoch);
  if (epochs > 0) s.append("/").append(std::to_string(epochs));
  return s;
}

// "312/937 0:12<0:25", shared by the live bar and the plain lines.
std::string counts_and_times(const Progress& p) {
  std::string s = std::to_string(p.step);
  if (p.steps > 0) s.append("/").append(std::to_string(p.steps));
  return s + " " + format_clock(p.elapsed_s) + "<" + format_clock(p.eta_s);
}

// The terminal's width when standard output is one, else 100 columns.
int terminal_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 100;
}

constexpr const char* kClearLine = "\r\x1b[K";

class TerminalRenderer final : public Renderer {
 public:
  TerminalRenderer(std::ostream& os, TerminalOptions o) : os_(os), o_(std::move(o)) {
    if (!o_.clock) {
      o_.clock = [] {
        using namespace std::chrono;
        return duration<double>(steady_clock::now().time_since_epoch()).count();
      };
    }
  }
  void on_fit_start(const FitInfo& info) override { epochs_ = info.epochs; }
  void on_progress(const Progress& p) override {
    double now = o_.clock();
    bool new_pass = !live_ || p.epoch != last_.epoch || p.split != last_.split;
    bool last_step = p.steps > 0 && p.step >= p.steps;
    last_ = p;
    live_ = true;
    // Throttled: the first and the last step of a pass are always drawn.
    if (!new_pass && !last_step && now - drawn_at_ < o_.min_interval_s) return;
    drawn_at_ = now;
    draw();
  }
  void on_epoch_end(const EpochRecord& r) override {
    os_ << kClearLine << format_epoch(r, epochs_) << '\n' << std::flush;
    live_ = false;
  }
  void on_message(std::string_view text) override {
    os_ << kClearLine << text << '\n';
    if (live_) draw();  // the live line stays below the messages
    os_ << std::flush;
  }
  void on_fit_end() override {
    if (live_) os_ << '\n' << std::flush;  // keep an unfinished epoch's last state on screen
    live_ = false;
  }

 private:
  void draw() {
    os_ << kClearLine << live_line(last_, o_.width > 0 ? o_.width : terminal_width())
        << std::flush;
  }
  std::string live_line(const Progress& p, int width) const;

  std::ostream& os_;
  TerminalOptions o_;
  int64_t epochs_ = 0;
  bool live_ = false;
  Progress last_;
  double drawn_at_ = 0;
};

// "epoch 3/10 train [#####.....] 312/937 0:12<0:25 loss 0.4123 accuracy 0.8512", with the bar
// sized to what the width leaves (10 to 30 cells) and the tail cut to width - 1 columns (the
// last column would wrap on some terminals).
std::string TerminalRenderer::live_line(const Progress& p, int width) const {
  std::string head = epoch_str(p.epoch, p.epochs > 0 ? p.epochs : epochs_) + " " +
                     std::string(split_name(p.split)) + " ";
  std::string tail = std::string(" ").append(counts_and_times(p));
  std::string metrics = format_metrics(p.metrics);
  if (!metrics.empty()) tail += " " + metrics;
  const int64_t usable = std::max(width - 1, 20);
  int64_t cells = usable - int64_t(head.size() + tail.size()) - 2;
  cells = std::clamp<int64_t>(cells, 10, 30);
  int64_t filled = 0;
  if (p.steps > 0) filled = std::clamp<int64_t>(cells * p.step / p.steps, 0, cells);
  std::string line = head + "[" + std::string(size_t(filled), '#') +
                     std::string(size_t(cells - filled), '.') + "]" + tail;
  if (int64_t(line.size()) > usable) line.resize(size_t(usable));
  return line;
}

class PlainRenderer final : public Renderer {
 public:
  PlainRenderer(std::ostream& os, int every) : os_(os), every_(every) {}
  void on_fit_start(const FitInfo& info) override {
    epochs_ = info.epochs;
    epoch_ = -1;  // a new fit starts its passes afresh, even at the same epoch
  }
  void on_progress(const Progress& p) override {
    if (p.epoch != epoch_ || p.split != split_) {
      epoch_ = p.epoch;
      split_ = p.split;
      bucket_ = 0;
    }
    if (every_ == 0 || p.steps <= 0) return;
    int64_t percent = std::clamp<int64_t>(p.step * 100 / p.steps, 0, 100);
    int64_t bucket = percent / every_;
    if (bucket <= bucket_) return;
    bucket_ = bucket;
    os_ << epoch_str(p.epoch, p.epochs > 0 ? p.epochs : epochs_) << ' ' << split_name(p.split)
        << ' ' << percent << "% " << counts_and_times(p);
    if (!p.metrics.empty()) os_ << ' ' << format_metrics(p.metrics);
    os_ << '\n' << std::flush;
  }
  void on_epoch_end(const EpochRecord& r) override {
    os_ << format_epoch(r, epochs_) << '\n' << std::flush;
  }
  void on_message(std::string_view text) override { os_ << text << '\n' << std::flush; }

 private:
  std::ostream& os_;
  int every_;
  int64_t epochs_ = 0, epoch_ = -1, bucket_ = 0;
  Split split_ = Split::train;
};

class SilentRenderer final : public Renderer {
 public:
  void on_progress(const Progress&) override {}
  void on_epoch_end(const EpochRecord&) override {}
  void on_message(std::string_view) override {}
};

}  // namespace

std::string_view split_name(Split s) { return s == Split::train ? "train" : "valid"; }

std::string format_epoch(const EpochRecord& r, int64_t epochs) {
  std::string s = epoch_str(r.epoch, epochs) + " " + format_duration(r.seconds);
  if (!r.train.empty()) s += " train " + format_metrics(r.train);
  if (!r.valid.empty()) s += (r.train.empty() ? " valid " : " | valid ") + format_metrics(r.valid);
  return s;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  seconds = std::max(seconds, 0.0);
  // Below a minute tenths matter; "%.1f" of 59.96 would read "60.0s", so that goes to 1:00 style.
  if (seconds < 59.95) return printf_str("%.1fs", seconds);
  return format_clock(std::max(seconds, 60.0));
}

std::string format_metric(std::string_view name, double v) {
  if (name == "samples_per_s")
    return std::isfinite(v) ? printf_str("%.0f samples/s", v) : "nan samples/s";
  std::string s(name);
  s += ' ';
  if (std::isnan(v)) return s + "nan";
  if (name == "lr") return s + printf_str("%.3g", v);
  double a = std::fabs(v);
  return s + printf_str(a == 0 || (a >= 1e-3 && a < 1e6) ? "%.4f" : "%.4g", v);
}

std::unique_ptr<Renderer> terminal_renderer(std::ostream& os) {
  return terminal_renderer(os, TerminalOptions{});
}
std::unique_ptr<Renderer> terminal_renderer(std::ostream& os, TerminalOptions options) {
  if (!(options.min_interval_s >= 0) || options.width < 0)
    detail::throw_value("terminal_renderer", "expected width >= 0 and min_interval_s >= 0");
  return std::make_unique<TerminalRenderer>(os, std::move(options));
}

std::unique_ptr<Renderer> plain_renderer(std::ostream& os, int every_percent) {
  if (every_percent < 0 || every_percent > 100)
    detail::throw_value("plain_renderer", "expected every_percent in [0, 100], found " +
                                              std::to_string(every_percent));
  return std::make_unique<PlainRenderer>(os, every_percent);
}

std::unique_ptr<Renderer> silent_renderer() { return std::make_unique<SilentRenderer>(); }

std::unique_ptr<Renderer> auto_renderer(bool dashboard) {
  if (!::isatty(STDOUT_FILENO)) return plain_renderer(std::cout);
  const char* env = std::getenv("EMBER_DASHBOARD");
  const char* term = std::getenv("TERM");
  if (dashboard && !(env && std::string_view(env) == "0") &&
      !(term && std::string_view(term) == "dumb"))
    return dashboard_renderer();
  return terminal_renderer(std::cout);
}

}  // namespace ember::train

#pragma once
// The dashboard's model and layout, apart from the terminal: what the events say (series of each
// metric, rates, the last messages) and how a frame of a given size shows it. Pure code, so the
// layout and the plots are tested without a terminal. Internal: ember/train/dashboard.h is the
// public face.
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ember/train/renderer.h"

namespace ember::train::detail {

/// A metric over iterations: the last `recent` points exactly, and the whole history in at most
/// `buckets` means of equal runs of points (pairs merge as it grows, so memory stays fixed).
class Series {
 public:
  explicit Series(size_t recent = 2048, size_t buckets = 1024);
  /// Adds a point; NaN and infinite values are skipped.
  void add(double x, double y);
  const std::deque<std::pair<double, double>>& recent() const { return recent_; }
  /// The whole history: each point is the mean x and mean y of a run of `per_bucket()` points
  /// (the last run may be shorter).
  std::vector<std::pair<double, double>> whole() const;
  size_t per_bucket() const { return per_bucket_; }
  size_t count() const { return count_; }

 private:
  struct Bucket {
    double x = 0, y = 0;
    size_t n = 0;
  };
  size_t recent_cap_, bucket_cap_;
  std::deque<std::pair<double, double>> recent_;
  std::vector<Bucket> buckets_;
  size_t per_bucket_ = 1, count_ = 0;
};

/// What the system panel shows; sampled about once a second by the dashboard.
struct SystemSample {
  double cpu_percent = -1;  // the process's CPU time over the last interval, % of one core
  int cores = 0;            // online cores
  int64_t rss_bytes = -1;   // resident set size
  int64_t threads = -1;
  int gpu = -1;                           // the cuda device in use (-1: none)
  int64_t gpu_allocated = -1;             // ember's allocator: live tensors' bytes
  int64_t gpu_reserved = -1;              // ember's allocator: bytes held from the driver
  int64_t gpu_used = -1, gpu_total = -1;  // the driver's view of the whole device (NVML)
  double gpu_util = -1;                   // % busy over the last sample (NVML)
};

/// Reads /proc for this process (CPU % since the previous call on the same object, RSS,
/// threads) and, when `gpu` >= 0, ember's CUDA allocator and NVML (loaded at run time when the
/// driver has it; its fields stay -1 otherwise).
class SystemMonitor {
 public:
  SystemSample sample(int gpu);

 private:
  double last_cpu_s_ = -1, last_wall_s_ = 0;
};

enum class Mode { running, paused, stopping, done };
enum class PlotView { iterations, epochs };

/// One cell of a frame: a glyph (UTF-8, one column wide) and a colour class.
struct Cell {
  std::string glyph = " ";
  uint8_t style = 0;  // 0 plain, 1 train, 2 valid, 3 frame, 4 title, 5 both series, 6 highlight
};
using Frame = std::vector<std::vector<Cell>>;  // rows of cells

/// A frame's rows as text without styles (what a terminal capture shows).
std::vector<std::string> frame_text(const Frame& f);
/// A row with the escape codes of its styles (SGR), ending in the default style.
std::string row_ansi(const std::vector<Cell>& row);

/// The dashboard's state, fed by the renderer events and the keys. `now` is seconds on a clock
/// that stands still while paused (so rates and ETAs leave pauses out).
class DashboardModel {
 public:
  void fit_start(const FitInfo& info, double now);
  void progress(const Progress& p, double now);
  void epoch_end(const EpochRecord& r);
  void message(std::string text);
  void set_system(const SystemSample& s) { sys_ = s; }
  void set_mode(Mode m) { mode_ = m; }
  Mode mode() const { return mode_; }

  // Keys.
  void next_plot(int delta);  // tab / arrows: the metric plotted
  void toggle_view();         // up / down: iterations or epochs
  void toggle_help() { help_ = !help_; }
  bool help() const { return help_; }
  /// Names of the plots in tab order (train metrics first, then valid-only ones).
  std::vector<std::string> plot_names() const;
  const std::string& plot_name() const { return plot_; }
  PlotView view() const { return view_; }

  /// The frame at `width` x `height` (at least 40 x 12 is useful; smaller frames say so).
  Frame render(int width, int height, double now) const;

  // For tests and the summary printed on exit.
  int64_t global_step() const { return global_; }
  const std::vector<std::string>& messages() const { return messages_; }
  /// Items (samples) per second over the last few seconds of steps; -1 before two steps.
  double items_per_s() const;
  /// Seconds left in the running pass, measured after the warm-up (the first steps of the
  /// pass); -1 while warming up.
  double eta_s(double now) const;
  /// Seconds left in the whole fit (this pass, the rest of this epoch, the epochs after it);
  /// -1 until it can be estimated.
  double fit_eta_s(double now) const;

 private:
  struct Rates {  // a pass's step rate after warm-up
    int64_t warm_step = -1;
    double warm_at = 0;
    double per_step = -1;  // seconds per step, measured
  };
  void draw_status(Frame& f, int x, int y, int w, int h, double now) const;
  void draw_metrics(Frame& f, int x, int y, int w, int h) const;
  void draw_system(Frame& f, int x, int y, int w, int h) const;
  void draw_plot(Frame& f, int x, int y, int w, int h) const;
  void draw_help(Frame& f, int x, int y, int w, int h) const;
  double seconds_per_step(Split s) const;

  FitInfo info_;
  Mode mode_ = Mode::running;
  bool started_ = false, help_ = false;
  Progress last_;
  double fit_started_ = 0, pass_started_ = 0;
  double pass_offset_ = 0;  // the pass's elapsed time at its first step seen (a resumed epoch)
  double last_at_ = 0;      // when the last step was reported
  int64_t global_ = 0;      // training batches done in the whole run (iteration index)
  Rates train_rate_, valid_rate_;
  double last_train_per_step_ = -1, last_valid_per_step_ = -1;
  std::deque<std::pair<double, int64_t>> recent_items_;  // (time, samples) of the last steps
  // Rows of the metrics panel: name -> latest and running values per split.
  struct Row {
    double latest[2] = {0, 0}, avg[2] = {0, 0};
    bool has[2] = {false, false};
  };
  std::vector<std::string> order_;  // metric names in first-seen order
  std::map<std::string, Row> rows_;
  double lr_ = 0;
  bool has_lr_ = false;
  // Plots: per metric, train over iterations; valid at each epoch's end (x = its iteration);
  // both over epochs.
  std::map<std::string, Series> train_iter_;
  std::map<std::string, std::vector<std::pair<double, double>>> valid_iter_, train_epoch_,
      valid_epoch_;
  std::string plot_;
  PlotView view_ = PlotView::iterations;
  std::vector<std::string> messages_;
  EpochRecord last_epoch_;
  bool has_epoch_ = false;
  SystemSample sys_;
};

/// Lines drawn with braille dots (2 x 4 per cell) in a `w` x `h` cell area of `f` at (x, y):
/// `series` are polylines in data coordinates with a style each; the y range is [lo, hi], the
/// x range [x0, x1]. Points of style 2 get a marker cell as well. Exposed for tests.
void plot_braille(
    Frame& f, int x, int y, int w, int h,
    const std::vector<std::pair<const std::vector<std::pair<double, double>>*, uint8_t>>& series,
    double x0, double x1, double lo, double hi);

}  // namespace ember::train::detail

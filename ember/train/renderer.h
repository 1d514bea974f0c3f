#pragma once
// How the Learner shows progress. A Renderer receives events; the library has a full-screen
// dashboard (ember/train/dashboard.h), a terminal one (a live progress bar with ETA and current
// metrics), a plain one (a line now and then, for logs and pipes) and a silent one.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::train {

/// Named metric values in display order ("loss", "accuracy", ...).
using MetricValues = std::vector<std::pair<std::string, double>>;

enum class Split { train, valid };
std::string_view split_name(Split s);  // "train", "valid"

/// One finished epoch: what the metric log stores, one row per epoch.
struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  double seconds = 0;  // wall time of the epoch (train + valid)
  MetricValues train, valid;
};

struct FitInfo {
  int64_t epochs = 0;       // the last epoch (1-based) fit will run
  int64_t start_epoch = 1;  // the first epoch this call runs (> 1 after a resume)
  int64_t train_steps = 0;  // batches per training epoch
  int64_t valid_steps = 0;  // batches per validation pass (0: no validation)
  int gpu = -1;             // the cuda device the model's parameters are on (-1: not a GPU)
  std::vector<EpochRecord> history;  // epochs finished before this fit (a resume)
};

/// Progress within one split of one epoch.
struct Progress {
  Split split = Split::train;
  int64_t epoch = 1, epochs = 1;  // 1-based
  int64_t step = 0, steps = 0;    // batches done and batches in this pass
  double elapsed_s = 0;           // since this pass started (or resumed)
  double eta_s = 0;               // estimated time left in this pass
  MetricValues metrics;           // running values
  double loss = 0;                // this step's (batch's) loss
  double lr = 0;                  // group 0's learning rate during this step
  int64_t samples = 0;            // samples in this step's batch
};

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual void on_fit_start(const FitInfo& /*info*/) {}
  /// Called after every step; a renderer throttles its own output.
  virtual void on_progress(const Progress& p) = 0;
  virtual void on_epoch_end(const EpochRecord& r) = 0;
  /// Notes from the Learner: "resumed from ...", "early stopping ...", "interrupted ...".
  virtual void on_message(std::string_view text) = 0;
  virtual void on_fit_end() {}
  /// Polled by the Learner after each step: true asks it to stop as Ctrl-C does (finish the
  /// optimizer step, save a checkpoint, return `interrupted`). The dashboard's `q` key.
  virtual bool stop_requested() { return false; }
};

/// A live line redrawn in place (at most ~10 times a second): epoch, a bar, step/steps, elapsed,
/// ETA and the running metrics; finished epochs stay on screen as summary lines.
std::unique_ptr<Renderer> terminal_renderer(std::ostream& os);
/// Knobs of the terminal renderer, for tests and embedding.
struct TerminalOptions {
  /// Columns of the line; 0 asks the terminal on standard output (100 when it is not one).
  int width = 0;
  /// Least time between two redraws of the live line (0 redraws on every step).
  double min_interval_s = 0.1;
  /// Seconds from some fixed point; default: std::chrono::steady_clock.
  std::function<double()> clock;
};
std::unique_ptr<Renderer> terminal_renderer(std::ostream& os, TerminalOptions options);
/// Plain lines: one per `every` percent of a pass (10 = at 10%, 20%, ...; 0 = none), and one
/// per finished epoch. Output is identical for identical runs except for times.
std::unique_ptr<Renderer> plain_renderer(std::ostream& os, int every_percent = 25);
/// Nothing at all.
std::unique_ptr<Renderer> silent_renderer();
/// When standard output is a terminal: the full-screen dashboard (dashboard_renderer()) unless
/// `dashboard` is false, the environment sets EMBER_DASHBOARD=0 or TERM is "dumb", in which case
/// terminal_renderer(std::cout); else (a file or a pipe) plain_renderer(std::cout).
std::unique_ptr<Renderer> auto_renderer(bool dashboard = true);

/// "epoch 3/10 37.2s train loss 0.4123 | valid loss 0.4400": a finished epoch's summary line.
std::string format_epoch(const EpochRecord& r, int64_t epochs);
/// "1:02:03", "4:05" or "7.2s" style durations used by the renderers.
std::string format_duration(double seconds);
/// One metric as the renderers show it: "loss 0.4123" (4 decimals; tiny or huge values in
/// %.4g style), "lr 0.001" (%.3g), "1234 samples/s" (throughput, whole samples), "loss nan".
std::string format_metric(std::string_view name, double value);

}  // namespace ember::train

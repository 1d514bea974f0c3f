#pragma once
// A training run as one self-contained HTML page: an SVG line plot per metric (train and valid on
// one plot, per epoch, and per iteration where the run has event files), with axes, ticks, labels,
// a legend and a title. No script, no style sheet or font from elsewhere: the file opens anywhere,
// offline. What `ember-plot RUN_DIR` and LearnerOptions::report_path write.
#include <string>
#include <utility>
#include <vector>

#include "ember/train/renderer.h"
#include "ember/train/tensorboard.h"

namespace ember::train {

/// One line of a plot: (x, y) points in x order. NaN and infinite y values leave gaps.
struct PlotSeries {
  std::string label;  // "train", "valid"
  std::vector<std::pair<double, double>> points;
};

struct Plot {
  std::string title;    // "loss per epoch"
  std::string x_label;  // "epoch", "iteration"
  std::string y_label;  // "loss"
  std::vector<PlotSeries> series;
};

/// The plots of a run: one per metric over epochs from `history` (train and valid series), then
/// one per metric over iterations from the scalars tagged "batch/<split>/<metric>" (what the
/// Learner writes per step). When `history` is empty, the per-epoch scalars ("<split>/<metric>")
/// stand in for it.
std::vector<Plot> run_plots(const std::vector<EpochRecord>& history,
                            const std::vector<ScalarEvent>& scalars = {});

/// `s` with &, <, >, " and ' as HTML character references (text and attribute values).
std::string html_escape(const std::string& s);

/// One plot as an <svg> element of `width` x `height` pixels.
std::string plot_svg(const Plot& plot, int width = 640, int height = 320);
/// The page: `title` as heading, then every plot.
std::string report_html(const std::string& title, const std::vector<Plot>& plots);
/// report_html written to `path` atomically; throws store::IOError.
void write_report(const std::string& path, const std::string& title,
                  const std::vector<Plot>& plots);

}  // namespace ember::train

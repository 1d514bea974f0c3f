#pragma once
// The full-screen training dashboard: a Renderer that takes over the terminal while fit runs.
// Panels: status (pass, epoch, iteration, elapsed, ETA after warm-up, items/s), the latest and
// running-average metrics of both passes, a plot of each metric over iterations (the recent
// window at full resolution beside the whole run, downsampled) or over epochs, train and valid on
// one plot, the learning rate, and system use (CPU, RSS, threads; GPU memory and utilisation
// for a model on a GPU). Keys: q stops after the current step and saves a checkpoint (q again
// quits at once), p pauses and resumes, tab and arrows switch plots, ? shows help.
//
// auto_renderer() picks it when standard output is a terminal; LearnerOptions::dashboard =
// false or EMBER_DASHBOARD=0 turns it off (the one-line bar runs instead), and a file or pipe
// always gets the plain renderer.
#include <memory>

#include "ember/train/renderer.h"

namespace ember::train {

struct DashboardOptions {
  /// Where frames go: a terminal (its size is read from it, and followed on SIGWINCH).
  int out_fd = 1;
  /// Where keys come from; ignored unless it is a terminal (-1: no keys).
  int in_fd = 0;
  /// Least time between two frames (a frame redraws only the rows that changed).
  double min_interval_s = 0.1;
  /// Restore the terminal on SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT and SIGSEGV (then let the
  /// signal do what it did before), leave it on Ctrl-Z and take it back on SIGCONT.
  bool handle_signals = true;
  /// When fit ends, print each finished epoch's line and the Learner's messages on the normal
  /// screen (the dashboard itself disappears with the alternate screen).
  bool summary = true;
};

/// The dashboard. One fit at a time may show it; the terminal is taken in on_fit_start and
/// given back in on_fit_end (or the destructor, an exception, exit() or a fatal signal).
std::unique_ptr<Renderer> dashboard_renderer(DashboardOptions options = {});

}  // namespace ember::train

// ember-plot: a training run's metrics as one self-contained HTML page of SVG plots.
//   ember-plot RUN_DIR [-o REPORT.html] [--title TITLE]
// RUN_DIR holds the metric log (metrics.csv or metrics.jsonl, or its only .csv/.jsonl file) and
// any TensorBoard event files (in RUN_DIR or one level below, such as RUN_DIR/tb); RUN_DIR may
// also name a log file itself. The report goes to RUN_DIR/report.html unless -o says otherwise.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/train/metric_log.h"
#include "ember/train/report.h"
#include "ember/train/tensorboard.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

int usage() {
  std::cerr << "usage: ember-plot RUN_DIR [-o REPORT.html] [--title TITLE]\n"
               "reads RUN_DIR's metric log (.csv or .jsonl) and TensorBoard event files and "
               "writes an HTML report with a plot per metric (default RUN_DIR/report.html)\n";
  return 2;
}

bool is_log(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".csv" || e == ".jsonl";
}

// The run's metric log: "" when it has none; throws when several could be meant.
std::string find_log(const fs::path& dir) {
  for (const char* name : {"metrics.csv", "metrics.jsonl"})
    if (fs::is_regular_file(dir / name)) return (dir / name).string();
  std::vector<std::string> logs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && is_log(e.path())) logs.push_back(e.path().string());
  if (logs.size() > 1)
    throw ValueError("[ember-plot] " + dir.string() + " holds " + std::to_string(logs.size()) +
                     " metric logs (" + logs[0] + ", " + logs[1] + ", ...): name one as RUN_DIR");
  return logs.empty() ? "" : logs[0];
}

}  // namespace

int main(int argc, char** argv) {
  std::string run, out, title;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if ((a == "-o" || a == "--out" || a == "--title") && k + 1 < argc) {
      (a == "--title" ? title : out) = argv[++k];
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (run.empty() && !a.empty() && a[0] != '-') {
      run = a;
    } else {
      return usage();
    }
  }
  if (run.empty()) return usage();
  try {
    const fs::path given(run);
    if (!fs::exists(given)) throw ValueError("[ember-plot] " + run + " does not exist");
    const bool is_dir = fs::is_directory(given);
    const fs::path dir = is_dir ? given : given.parent_path().empty() ? "." : given.parent_path();
    const std::string log = is_dir ? find_log(dir) : given.string();
    std::vector<train::EpochRecord> history;
    if (!log.empty()) history = train::read_metric_log(log);
    std::vector<train::ScalarEvent> scalars = train::read_event_dir(dir.string());
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory())
        for (auto& s : train::read_event_dir(e.path().string())) scalars.push_back(std::move(s));
    if (log.empty() && scalars.empty())
      throw ValueError("[ember-plot] " + dir.string() +
                       ": expected a metric log (.csv or .jsonl) or TensorBoard event files, "
                       "found neither");
    std::vector<train::Plot> plots = train::run_plots(history, scalars);
    if (out.empty()) out = (dir / "report.html").string();
    if (title.empty()) {
      fs::path name = fs::absolute(dir).lexically_normal();
      if (name.filename().empty()) name = name.parent_path();  // "run/"
      title = "Training run " + name.filename().string();
    }
    train::write_report(out, title, plots);
    std::cout << "wrote " << out << " (" << plots.size() << " plots)\n";
  } catch (const std::exception& e) {
    std::cerr << "ember-plot: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

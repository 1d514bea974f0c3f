#pragma once
// `ember-bench report`: the history as one self-contained HTML page, no script and nothing
// fetched: per machine and suite, one SVG plot per row of its median per run on every device
// beside its peers' rows, and a table of the latest run's figures with their spread and ratios.
#include <string>

namespace ember::benchtool {

struct ReportOptions {
  std::string history;
  std::string out = "ember-bench-report.html";
  std::string suite;    // empty: every suite
  std::string machine;  // a fingerprint prefix; empty: every machine
};

/// Writes the page (atomically); returns 0. Throws ToolError.
int report_command(const ReportOptions& o);

}  // namespace ember::benchtool

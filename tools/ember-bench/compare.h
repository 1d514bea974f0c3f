#pragma once
// `ember-bench compare A B`: ember's rows at A against the same rows at B (same machine
// fingerprint, same device), flagging each change beyond a threshold whose interquartile ranges
// are apart as a regression or an improvement ("unclear" when they overlap).
#include <string>

namespace ember::benchtool {

struct CompareOptions {
  std::string a, b;  // run ids or commit prefixes
  std::string history;
  double threshold = 0.10;  // a change of more than 10% of A's median counts
  bool json = false;
};

/// Prints the comparison; returns kRegression when some row regressed, else 0. Throws ToolError.
int compare_command(const CompareOptions& o);

}  // namespace ember::benchtool

#pragma once
// Medians and spread of timings.
#include <vector>

namespace ember::benchtool {

/// A set of timings summarised: the median, the extremes and the interquartile range (the
/// quartiles interpolate linearly between order statistics, as numpy's default does).
struct Stats {
  double median = 0, min = 0, max = 0, q1 = 0, q3 = 0;
  int n = 0;
};

/// The summary of `xs` (all zero when it is empty).
Stats summarize(std::vector<double> xs);
/// The q-quantile (0 <= q <= 1) of sorted `xs`, interpolated.
double quantile(const std::vector<double>& sorted, double q);

}  // namespace ember::benchtool

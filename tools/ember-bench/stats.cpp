#include "stats.h"

#include <algorithm>
#include <cmath>

namespace ember::benchtool {

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

Stats summarize(std::vector<double> xs) {
  Stats s;
  if (xs.empty()) return s;
  std::sort(xs.begin(), xs.end());
  s.n = int(xs.size());
  s.min = xs.front();
  s.max = xs.back();
  s.median = quantile(xs, 0.5);
  s.q1 = quantile(xs, 0.25);
  s.q3 = quantile(xs, 0.75);
  return s;
}

}  // namespace ember::benchtool

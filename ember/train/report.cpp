#include "ember/train/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ember/store/atomic_file.h"

namespace ember::train {
namespace {

// Series colours by position: train, valid, then others.
constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"};
// Above this many points a series is reduced to each bucket's minimum and maximum, which keeps
// its envelope (spikes included) at a size a browser draws at once.
constexpr size_t kMaxPoints = 2000;

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

std::string tick_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// A step of 1, 2 or 5 times a power of ten giving about `target` intervals over `range`.
double nice_step(double range, int target) {
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

struct Axis {
  double lo = 0, hi = 1, step = 1;
};

// An axis over [lo, hi] widened to whole ticks; a single value gets a span around it.
Axis make_axis(double lo, double hi, bool integral) {
  if (hi <= lo) {
    const double pad = integral ? 1 : lo != 0 ? std::abs(lo) * 0.05 : 1;
    lo -= pad;
    hi += pad;
  }
  Axis a;
  a.step = nice_step(hi - lo, 5);
  if (integral) a.step = std::max(1.0, std::round(a.step));
  a.lo = std::floor(lo / a.step) * a.step;
  a.hi = std::ceil(hi / a.step) * a.step;
  return a;
}

std::vector<std::pair<double, double>> reduced(const std::vector<std::pair<double, double>>& pts) {
  if (pts.size() <= kMaxPoints) return pts;
  std::vector<std::pair<double, double>> out;
  const size_t buckets = kMaxPoints / 2;
  for (size_t b = 0; b < buckets; ++b) {
    const size_t from = pts.size() * b / buckets, to = pts.size() * (b + 1) / buckets;
    size_t lo = to, hi = to;
    bool gap = false;
    for (size_t i = from; i < to; ++i) {
      if (!std::isfinite(pts[i].second)) {
        gap = true;
        continue;
      }
      if (lo == to || pts[i].second < pts[lo].second) lo = i;
      if (hi == to || pts[i].second > pts[hi].second) hi = i;
    }
    if (lo != to) out.push_back(pts[std::min(lo, hi)]);
    if (hi != to && hi != lo) out.push_back(pts[std::max(lo, hi)]);
    if (gap) out.emplace_back(pts[to - 1].first, NAN);
  }
  return out;
}

// A point of some metric of some split.
struct Sample {
  std::string split, metric;
  double x, y;
};

// One plot per metric (first-seen order), one series per split within it, points in x order.
std::vector<Plot> group(const std::vector<Sample>& samples, const std::string& x_label) {
  std::vector<Plot> plots;
  for (const Sample& s : samples) {
    auto p = std::find_if(plots.begin(), plots.end(),
                          [&](const Plot& q) { return q.y_label == s.metric; });
    if (p == plots.end())
      p = plots.insert(plots.end(), Plot{s.metric + " per " + x_label, x_label, s.metric, {}});
    auto ser = std::find_if(p->series.begin(), p->series.end(),
                            [&](const PlotSeries& q) { return q.label == s.split; });
    if (ser == p->series.end()) ser = p->series.insert(p->series.end(), PlotSeries{s.split, {}});
    ser->points.emplace_back(s.x, s.y);
  }
  for (Plot& p : plots)
    for (PlotSeries& s : p.series)
      std::stable_sort(s.points.begin(), s.points.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
  return plots;
}

// "batch/train/loss" with prefix "batch/" -> ("train", "loss"); false for other tags.
bool split_tag(const std::string& tag, const std::string& prefix, std::string& split,
               std::string& metric) {
  if (tag.rfind(prefix, 0) != 0) return false;
  const std::string rest = tag.substr(prefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) return false;
  split = rest.substr(0, slash);
  metric = rest.substr(slash + 1);
  return prefix.empty() ? (split == "train" || split == "valid") : true;
}

std::vector<Sample> tagged(const std::vector<ScalarEvent>& scalars, const std::string& prefix) {
  std::vector<Sample> out;
  std::string split, metric;
  for (const auto& e : scalars)
    if (split_tag(e.tag, prefix, split, metric))
      out.push_back({split, metric, double(e.step), double(e.value)});
  return out;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<Plot> run_plots(const std::vector<EpochRecord>& history,
                            const std::vector<ScalarEvent>& scalars) {
  std::vector<Sample> epochs;
  for (Split sp : {Split::train, Split::valid})
    for (const auto& r : history)
      for (const auto& [name, v] : sp == Split::train ? r.train : r.valid)
        epochs.push_back({std::string(split_name(sp)), name, double(r.epoch), v});
  if (history.empty()) epochs = tagged(scalars, "");
  std::vector<Plot> plots = group(epochs, "epoch");
  for (Plot& p : group(tagged(scalars, "batch/"), "iteration")) plots.push_back(std::move(p));
  return plots;
}

std::string plot_svg(const Plot& plot, int width, int height) {
  const double x0 = 72, x1 = width - 20, y0 = 48, y1 = height - 50;
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  bool integral = true;
  for (const auto& s : plot.series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      ymin = std::min(ymin, y), ymax = std::max(ymax, y);
      integral &= x == std::floor(x);
    }
  const bool empty = !(xmin <= xmax);
  const Axis ax = empty ? Axis{0, 1, 1} : make_axis(xmin, xmax, integral);
  const Axis ay = empty ? Axis{0, 1, 1} : make_axis(ymin, ymax, false);
  auto sx = [&](double x) { return x0 + (x - ax.lo) / (ax.hi - ax.lo) * (x1 - x0); };
  auto sy = [&](double y) { return y1 - (y - ay.lo) / (ay.hi - ay.lo) * (y1 - y0); };

  std::string o = "<svg class=\"plot\" width=\"" + std::to_string(width) + "\" height=\"" +
                  std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
                  std::to_string(height) + "\" role=\"img\" aria-label=\"" + html_escape(plot.title) +
                  "\">\n";
  o += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  o += "<text class=\"title\" x=\"" + num(width / 2.0) + "\" y=\"20\" text-anchor=\"middle\">" +
       html_escape(plot.title) + "</text>\n";
  // Grid, ticks and their labels.
  for (int i = 0;; ++i) {
    const double t = ay.lo + i * ay.step;
    if (t > ay.hi + ay.step * 1e-9) break;
    const double y = sy(t);
    o += "<line class=\"grid\" x1=\"" + num(x0) + "\" x2=\"" + num(x1) + "\" y1=\"" + num(y) +
         "\" y2=\"" + num(y) + "\"/><text class=\"tick\" x=\"" + num(x0 - 6) + "\" y=\"" +
         num(y + 4) + "\" text-anchor=\"end\">" + tick_text(std::abs(t) < ay.step * 1e-9 ? 0 : t) +
         "</text>\n";
  }
  for (int i = 0;; ++i) {
    const double t = ax.lo + i * ax.step;
    if (t > ax.hi + ax.step * 1e-9) break;
    const double x = sx(t);
    o += "<line class=\"grid\" x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(y0) +
         "\" y2=\"" + num(y1) + "\"/><text class=\"tick\" x=\"" + num(x) + "\" y=\"" +
         num(y1 + 16) + "\" text-anchor=\"middle\">" +
         tick_text(std::abs(t) < ax.step * 1e-9 ? 0 : t) + "</text>\n";
  }
  o += "<rect class=\"frame\" x=\"" + num(x0) + "\" y=\"" + num(y0) + "\" width=\"" + num(x1 - x0) +
       "\" height=\"" + num(y1 - y0) + "\"/>\n";
  o += "<text class=\"axis-label\" x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num(height - 12.0) +
       "\" text-anchor=\"middle\">" + html_escape(plot.x_label) + "</text>\n";
  o += "<text class=\"axis-label\" x=\"16\" y=\"" + num((y0 + y1) / 2) +
       "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " + num((y0 + y1) / 2) + ")\">" +
       html_escape(plot.y_label) + "</text>\n";
  if (empty)
    o += "<text class=\"note\" x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num((y0 + y1) / 2) +
         "\" text-anchor=\"middle\">no finite values</text>\n";

  // The lines: a path broken at non-finite values; lone points (and short series) as dots.
  double legend_x = x0;  // the legend runs along the top, between the title and the frame
  for (size_t k = 0; k < plot.series.size(); ++k) {
    const PlotSeries& s = plot.series[k];
    const std::string color = kColors[k % std::size(kColors)];
    const auto pts = reduced(s.points);
    const bool dots = pts.size() <= 60;
    std::string d, circles;
    for (size_t i = 0; i < pts.size(); ++i) {
      const auto [x, y] = pts[i];
      if (!std::isfinite(y) || !std::isfinite(x)) continue;
      const bool prev = i > 0 && std::isfinite(pts[i - 1].second);
      const bool next = i + 1 < pts.size() && std::isfinite(pts[i + 1].second);
      d += (prev ? " L" : " M") + num(sx(x)) + " " + num(sy(y));
      if (dots || (!prev && !next))
        circles += "<circle cx=\"" + num(sx(x)) + "\" cy=\"" + num(sy(y)) + "\" r=\"3\" fill=\"" +
                   color + "\"/>";
    }
    if (!d.empty())
      o += "<path class=\"line\" d=\"" + d.substr(1) + "\" stroke=\"" + color + "\"/>\n";
    if (!circles.empty()) o += circles + "\n";
    size_t bad = 0;
    for (const auto& p : s.points) bad += !std::isfinite(p.second);
    const std::string label =
        s.label + (bad ? " (" + std::to_string(bad) + " non-finite not drawn)" : "");
    const double ly = y0 - 10;
    o += "<line x1=\"" + num(legend_x) + "\" x2=\"" + num(legend_x + 20) + "\" y1=\"" +
         num(ly - 4) + "\" y2=\"" + num(ly - 4) + "\" stroke=\"" + color +
         "\" stroke-width=\"3\"/><text class=\"legend\" x=\"" + num(legend_x + 26) + "\" y=\"" +
         num(ly) + "\">" + html_escape(label) + "</text>\n";
    legend_x += 26 + 7.0 * double(label.size()) + 18;  // about 7 pixels a character at 12 px
  }
  return o + "</svg>\n";
}

std::string report_html(const std::string& title, const std::vector<Plot>& plots) {
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
      html_escape(title) +
      "</title>\n<style>\n"
      "body { font-family: sans-serif; margin: 24px; background: #f6f6f6; color: #222; }\n"
      "svg.plot { background: #fff; margin: 0 16px 16px 0; border: 1px solid #ddd; }\n"
      "svg text { font-family: sans-serif; font-size: 12px; fill: #222; }\n"
      "svg text.title { font-size: 14px; font-weight: bold; }\n"
      "svg text.axis-label { font-size: 13px; }\n"
      "svg .grid { stroke: #e4e4e4; stroke-width: 1; }\n"
      "svg .frame { fill: none; stroke: #444; stroke-width: 1; }\n"
      "svg .line { fill: none; stroke-width: 2; stroke-linejoin: round; }\n"
      "</style>\n</head>\n<body>\n<h1>" +
      html_escape(title) + "</h1>\n";
  if (plots.empty()) o += "<p>No metrics.</p>\n";
  for (const Plot& p : plots) o += plot_svg(p);
  return o + "</body>\n</html>\n";
}

void write_report(const std::string& path, const std::string& title,
                  const std::vector<Plot>& plots) {
  store::write_file_atomic(path, report_html(title, plots));
}

}  // namespace ember::train

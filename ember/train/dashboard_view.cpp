#include "ember/train/detail/dashboard_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

// The frame is a grid of one-column cells, filled panel by panel; the terminal side (dashboard.cpp)
// only turns rows into escape codes and writes the ones that changed.

namespace ember::train::detail {
namespace {

// --- text into cells ---

// The UTF-8 sequences of `s`, one per code point (every glyph used here is one column wide).
std::vector<std::string_view> glyphs(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    n = std::min(n, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

int text_width(std::string_view s) { return int(glyphs(s).size()); }

// Writes `s` at (x, y), clipped to `max_w` columns and to the frame.
void put(Frame& f, int x, int y, std::string_view s, uint8_t style = 0, int max_w = 1 << 20) {
  if (y < 0 || y >= int(f.size())) return;
  auto& row = f[size_t(y)];
  int col = x;
  for (std::string_view g : glyphs(s)) {
    if (col - x >= max_w || col >= int(row.size())) break;
    if (col >= 0) row[size_t(col)] = {std::string(g), style};
    ++col;
  }
}

void put_right(Frame& f, int right, int y, std::string_view s, uint8_t style = 0) {
  put(f, right - text_width(s), y, s, style);
}

void box(Frame& f, int x, int y, int w, int h, std::string_view title) {
  if (w < 2 || h < 2) return;
  for (int i = 1; i < w - 1; ++i) {
    put(f, x + i, y, "─", 3);
    put(f, x + i, y + h - 1, "─", 3);
  }
  for (int j = 1; j < h - 1; ++j) {
    put(f, x, y + j, "│", 3);
    put(f, x + w - 1, y + j, "│", 3);
  }
  put(f, x, y, "┌", 3);
  put(f, x + w - 1, y, "┐", 3);
  put(f, x, y + h - 1, "└", 3);
  put(f, x + w - 1, y + h - 1, "┘", 3);
  if (!title.empty()) put(f, x + 2, y, std::string(" ").append(title).append(" "), 4, w - 4);
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A metric value in at most 9 columns.
std::string value_str(std::string_view name, double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (name == "samples_per_s") return fmt("%.0f", v);
  if (name == "lr") return fmt("%.3g", v);
  double a = std::fabs(v);
  return fmt(a == 0 || (a >= 1e-3 && a < 1e4) ? "%.4f" : "%.3g", v);
}

std::string bytes_str(int64_t b) {
  if (b < 0) return "n/a";
  double v = double(b);
  if (v >= 1024.0 * 1024 * 1024) return fmt("%.2f GiB", v / (1024.0 * 1024 * 1024));
  if (v >= 1024.0 * 1024) return fmt("%.1f MiB", v / (1024.0 * 1024));
  return fmt("%.0f KiB", v / 1024.0);
}

// --- plots ---

// Braille dot bits, indexed [row 0..3][column 0..1] of a cell.
constexpr uint8_t kDot[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};

std::string braille(uint8_t bits) {
  const unsigned cp = 0x2800u + bits;
  std::string s;
  s += char(0xE0 | (cp >> 12));
  s += char(0x80 | ((cp >> 6) & 0x3F));
  s += char(0x80 | (cp & 0x3F));
  return s;
}

using Points = std::vector<std::pair<double, double>>;

// The y range of what is drawn, padded a little (a flat line sits in the middle).
std::pair<double, double> y_range(const std::vector<const Points*>& sets, double x0, double x1) {
  double lo = INFINITY, hi = -INFINITY;
  for (const Points* s : sets)
    for (const auto& [x, y] : *s)
      if (x >= x0 && x <= x1) {
        lo = std::min(lo, y);
        hi = std::max(hi, y);
      }
  if (!(lo <= hi)) return {0, 1};
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    double pad = std::fabs(hi) > 0 ? std::fabs(hi) * 0.5 : 1.0;
    return {lo - pad, hi + pad};
  }
  double pad = (hi - lo) * 0.05;
  return {lo - pad, hi + pad};
}

std::string axis_num(double v) {
  double a = std::fabs(v);
  return fmt(a != 0 && (a < 1e-2 || a >= 1e5) ? "%.2g" : a < 10 ? "%.3f" : "%.1f", v);
}

// One plot: a label line, the canvas with y labels on the left, x labels below.
void subplot(Frame& f, int x, int y, int w, int h, const std::string& label, const Points& train,
             const Points& valid, double x0, double x1, std::string_view x_unit) {
  put(f, x, y, label, 4, w);
  if (h < 4 || w < 16) return;
  const int label_w = 8, cw = w - label_w - 1, ch = h - 2;
  auto [lo, hi] = y_range({&train, &valid}, x0, x1);
  put_right(f, x + label_w, y + 1, axis_num(hi));
  put_right(f, x + label_w, y + ch, axis_num(lo));
  if (ch >= 5) put_right(f, x + label_w, y + 1 + ch / 2, axis_num((lo + hi) / 2));
  for (int j = 0; j < ch; ++j) put(f, x + label_w, y + 1 + j, "┤", 3);
  plot_braille(f, x + label_w + 1, y + 1, cw, ch, {{&train, 1}, {&valid, 2}}, x0, x1, lo, hi);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.0f", x0);
  put(f, x + label_w + 1, y + h - 1, buf, 3);
  std::snprintf(buf, sizeof buf, "%.0f %.*s", x1, int(x_unit.size()), x_unit.data());
  put_right(f, x + w, y + h - 1, buf, 3);
}

}  // namespace

// --- Series ---

Series::Series(size_t recent, size_t buckets)
    : recent_cap_(std::max<size_t>(recent, 1)),
      bucket_cap_(std::max<size_t>(buckets, 2) & ~size_t(1)) {}

void Series::add(double x, double y) {
  if (!std::isfinite(y) || !std::isfinite(x)) return;
  ++count_;
  recent_.emplace_back(x, y);
  if (recent_.size() > recent_cap_) recent_.pop_front();
  if (buckets_.empty() || buckets_.back().n >= per_bucket_) {
    if (buckets_.size() == bucket_cap_) {  // merge pairs: twice the points per bucket
      for (size_t i = 0; i < bucket_cap_ / 2; ++i) {
        const Bucket &a = buckets_[2 * i], &b = buckets_[2 * i + 1];
        buckets_[i] = {a.x + b.x, a.y + b.y, a.n + b.n};
      }
      buckets_.resize(bucket_cap_ / 2);
      per_bucket_ *= 2;
    }
    if (buckets_.empty() || buckets_.back().n >= per_bucket_) buckets_.push_back({});
  }
  Bucket& b = buckets_.back();
  b.x += x;
  b.y += y;
  ++b.n;
}

std::vector<std::pair<double, double>> Series::whole() const {
  std::vector<std::pair<double, double>> out;
  out.reserve(buckets_.size());
  for (const Bucket& b : buckets_)
    if (b.n) out.emplace_back(b.x / double(b.n), b.y / double(b.n));
  return out;
}

// --- frames ---

std::vector<std::string> frame_text(const Frame& f) {
  std::vector<std::string> out;
  for (const auto& row : f) {
    std::string s;
    for (const Cell& c : row) s += c.glyph;
    out.push_back(std::move(s));
  }
  return out;
}

std::string row_ansi(const std::vector<Cell>& row) {
  // train cyan, valid yellow, frame dim, title bold, both white bold, highlight reversed.
  static const char* const kSgr[] = {"\x1b[0m",   "\x1b[0;36m",   "\x1b[0;33m", "\x1b[0;2m",
                                     "\x1b[0;1m", "\x1b[0;1;37m", "\x1b[0;7m"};
  std::string s;
  int style = -1;
  for (const Cell& c : row) {
    if (c.style != style) {
      style = c.style;
      s += kSgr[style < 7 ? style : 0];
    }
    s += c.glyph;
  }
  return s + "\x1b[0m";
}

void plot_braille(Frame& f, int x, int y, int w, int h,
                  const std::vector<std::pair<const Points*, uint8_t>>& series, double x0,
                  double x1, double lo, double hi) {
  if (w <= 0 || h <= 0) return;
  const int dw = w * 2, dh = h * 4;
  std::vector<uint8_t> bits(size_t(w * h) * 2, 0);  // [cell][train, valid]
  std::vector<std::pair<int, int>> markers;
  auto to_dot = [&](double px, double py) {
    double fx = x1 > x0 ? (px - x0) / (x1 - x0) : 0.5;
    double fy = hi > lo ? (hi - py) / (hi - lo) : 0.5;
    return std::pair<int, int>{int(std::lround(std::clamp(fx, 0.0, 1.0) * (dw - 1))),
                               int(std::lround(std::clamp(fy, 0.0, 1.0) * (dh - 1)))};
  };
  auto set = [&](int dx, int dy, int layer) {
    if (dx < 0 || dy < 0 || dx >= dw || dy >= dh) return;
    bits[size_t((dy / 4) * w + dx / 2) * 2 + size_t(layer)] |= kDot[dy % 4][dx % 2];
  };
  for (const auto& [pts, style] : series) {
    const int layer = style == 2 ? 1 : 0;
    bool have = false;
    std::pair<int, int> prev{};
    for (const auto& [px, py] : *pts) {
      if (px < x0 || px > x1) continue;
      auto d = to_dot(px, py);
      if (style == 2) markers.push_back(d);
      if (!have) {
        set(d.first, d.second, layer);
      } else {  // Bresenham from the previous point
        int x_a = prev.first, y_a = prev.second;
        const int ddx = std::abs(d.first - x_a), ddy = -std::abs(d.second - y_a);
        const int sx = x_a < d.first ? 1 : -1, sy = y_a < d.second ? 1 : -1;
        int err = ddx + ddy;
        for (;;) {
          set(x_a, y_a, layer);
          if (x_a == d.first && y_a == d.second) break;
          int e2 = 2 * err;
          if (e2 >= ddy) {
            err += ddy;
            x_a += sx;
          }
          if (e2 <= ddx) {
            err += ddx;
            y_a += sy;
          }
        }
      }
      prev = d;
      have = true;
    }
  }
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < w; ++i) {
      uint8_t t = bits[size_t(j * w + i) * 2], v = bits[size_t(j * w + i) * 2 + 1];
      if (!t && !v) continue;
      put(f, x + i, y + j, braille(uint8_t(t | v)), t && v ? 5 : v ? 2 : 1);
    }
  for (const auto& [dx, dy] : markers) put(f, x + dx / 2, y + dy / 4, "o", 2);
}

// --- the model ---

void DashboardModel::fit_start(const FitInfo& info, double now) {
  info_ = info;
  started_ = true;
  fit_started_ = pass_started_ = now;
  mode_ = Mode::running;
  global_ = (info.start_epoch - 1) * info.train_steps;
  last_ = Progress{};
  last_.step = -1;
  for (const EpochRecord& r : info.history) epoch_end(r);
}

void DashboardModel::progress(const Progress& p, double now) {
  const bool new_pass =
      last_.step < 0 || p.epoch != last_.epoch || p.split != last_.split || p.step < last_.step;
  const int si = p.split == Split::train ? 0 : 1;
  Rates& rate = si == 0 ? train_rate_ : valid_rate_;
  if (new_pass) {
    if (rate.per_step > 0) (si == 0 ? last_train_per_step_ : last_valid_per_step_) = rate.per_step;
    rate = Rates{};
    rate.warm_step = p.step + 2;  // the first steps of a pass pay for warm-up (threads, caches)
    pass_started_ = now;
    recent_items_.clear();
    pass_offset_ = p.elapsed_s;
  }
  if (p.step == rate.warm_step) rate.warm_at = now;
  if (p.step > rate.warm_step && now > rate.warm_at)
    rate.per_step = (now - rate.warm_at) / double(p.step - rate.warm_step);
  if (p.split == Split::train) {
    global_ = (p.epoch - 1) * std::max<int64_t>(p.steps, info_.train_steps) + p.step;
    if (info_.train_steps <= 0) info_.train_steps = p.steps;
  }
  recent_items_.emplace_back(now, p.samples);
  while (recent_items_.size() > 2 &&
         (recent_items_.size() > 512 || now - recent_items_.front().first > 3.0))
    recent_items_.pop_front();
  for (const auto& [name, v] : p.metrics) {
    auto [it, fresh] = rows_.try_emplace(name);
    if (fresh) order_.push_back(name);
    Row& r = it->second;
    r.avg[si] = v;
    r.latest[si] = name == "loss" ? p.loss : v;
    r.has[si] = true;
    if (p.split == Split::train)
      train_iter_[name].add(double(global_), name == "loss" ? p.loss : v);
  }
  if (p.split == Split::train) {
    lr_ = p.lr;
    has_lr_ = true;
    if (!rows_.count("lr")) train_iter_["lr"].add(double(global_), p.lr);
  }
  if (plot_.empty()) plot_ = order_.empty() ? std::string("lr") : order_.front();
  last_ = p;
  last_at_ = now;
}

void DashboardModel::epoch_end(const EpochRecord& r) {
  const double x = double(r.epoch * std::max<int64_t>(info_.train_steps, 1));
  for (const auto& [name, v] : r.train) {
    if (std::isfinite(v)) train_epoch_[name].emplace_back(double(r.epoch), v);
    if (!rows_.count(name)) {
      order_.push_back(name);
      rows_[name];
    }
  }
  for (const auto& [name, v] : r.valid) {
    if (!std::isfinite(v)) continue;
    valid_epoch_[name].emplace_back(double(r.epoch), v);
    valid_iter_[name].emplace_back(x, v);
    if (!rows_.count(name)) {
      order_.push_back(name);
      rows_[name];
    }
  }
  if (plot_.empty() && !order_.empty()) plot_ = order_.front();
  last_epoch_ = r;
  has_epoch_ = true;
}

void DashboardModel::message(std::string text) {
  messages_.push_back(std::move(text));
  if (messages_.size() > 100) messages_.erase(messages_.begin());
}

std::vector<std::string> DashboardModel::plot_names() const {
  std::vector<std::string> out = order_;
  if (has_lr_ && !rows_.count("lr")) out.push_back("lr");
  return out;
}

void DashboardModel::next_plot(int delta) {
  auto names = plot_names();
  if (names.empty()) return;
  auto it = std::find(names.begin(), names.end(), plot_);
  int i = it == names.end() ? 0 : int(it - names.begin());
  int n = int(names.size());
  plot_ = names[size_t(((i + delta) % n + n) % n)];
}

void DashboardModel::toggle_view() {
  view_ = view_ == PlotView::iterations ? PlotView::epochs : PlotView::iterations;
}

double DashboardModel::items_per_s() const {
  if (recent_items_.size() < 2) return -1;
  double dt = recent_items_.back().first - recent_items_.front().first;
  if (dt <= 0) return -1;
  int64_t n = 0;
  for (size_t i = 1; i < recent_items_.size(); ++i) n += recent_items_[i].second;
  return double(n) / dt;
}

double DashboardModel::eta_s(double now) const {
  const Rates& r = last_.split == Split::train ? train_rate_ : valid_rate_;
  if (r.per_step <= 0 || last_.steps <= 0) return -1;
  // The time since the last step counts against the next one.
  double left = r.per_step * double(last_.steps - last_.step) - std::max(0.0, now - last_at_);
  return std::max(left, 0.0);
}

double DashboardModel::seconds_per_step(Split s) const {
  if (s == Split::train)
    return train_rate_.per_step > 0 ? train_rate_.per_step : last_train_per_step_;
  return valid_rate_.per_step > 0 ? valid_rate_.per_step : last_valid_per_step_;
}

double DashboardModel::fit_eta_s(double now) const {
  double pass = eta_s(now);
  if (pass < 0) return -1;
  double tps = seconds_per_step(Split::train), vps = seconds_per_step(Split::valid);
  if (info_.valid_steps > 0 && vps <= 0) return -1;  // no validation pass timed yet
  const double valid_pass = info_.valid_steps > 0 ? vps * double(info_.valid_steps) : 0;
  double left = pass;
  if (last_.split == Split::train) left += valid_pass;
  const int64_t epochs_after = std::max<int64_t>(info_.epochs - last_.epoch, 0);
  if (epochs_after > 0) {
    if (tps <= 0) return -1;
    left += double(epochs_after) * (tps * double(info_.train_steps) + valid_pass);
  }
  return left;
}

Frame DashboardModel::render(int width, int height, double now) const {
  Frame f(size_t(std::max(height, 1)), std::vector<Cell>(size_t(std::max(width, 1))));
  if (width < 40 || height < 12) {
    put(f, 0, 0, "terminal too small");
    put(f, 0, 1, std::to_string(width) + "x" + std::to_string(height) + ", needs 40x12");
    return f;
  }
  // Title bar, with what state the run is in and the keys.
  for (int i = 0; i < width; ++i) put(f, i, 0, " ", 6);
  static const char* const kMode[] = {"RUNNING", "PAUSED", "STOPPING (saving a checkpoint)",
                                      "DONE"};
  put(f, 1, 0, std::string("ember training · ") + kMode[int(mode_)], 6);
  put_right(f, width - 1, 0, "q stop  p pause  tab/arrows plots  ? help", 6);

  // Panel heights: status 4, metrics (2 header lines, a row per metric, the last epoch), plot.
  const int n_rows = int(order_.size());
  int mh = std::max(n_rows + 5, 9);
  int ph = height - 1 - 4 - mh - 1;
  if (ph < 7) {
    mh = std::max(height - 1 - 4 - 1 - 7, 5);
    ph = height - 1 - 4 - mh - 1;
  }
  const int sys_w = std::clamp(width * 2 / 5, 30, 44);
  draw_status(f, 0, 1, width, 4, now);
  draw_metrics(f, 0, 5, width - sys_w, mh);
  draw_system(f, width - sys_w, 5, sys_w, mh);
  if (help_)
    draw_help(f, 0, 5 + mh, width, ph);
  else
    draw_plot(f, 0, 5 + mh, width, ph);
  if (!messages_.empty()) put(f, 1, height - 1, messages_.back(), 0, width - 2);
  return f;
}

void DashboardModel::draw_status(Frame& f, int x, int y, int w, int h, double now) const {
  box(f, x, y, w, h, "status");
  if (last_.step < 0) {
    put(f, x + 2, y + 1, "starting…", 0, w - 4);
    return;
  }
  const bool train = last_.split == Split::train;
  std::string l1 = std::string("mode ") + (train ? "train" : "valid") + "   epoch " +
                   std::to_string(last_.epoch) + "/" + std::to_string(info_.epochs) +
                   "   iteration " + std::to_string(last_.step) + "/" + std::to_string(last_.steps);
  if (train) l1 += "   (run " + std::to_string(global_) + ")";
  const double pass_elapsed = pass_offset_ + std::max(0.0, now - pass_started_);
  double eta = eta_s(now), fit_eta = fit_eta_s(now);
  std::string l2 = "elapsed " + format_duration(pass_elapsed) + " (fit " +
                   format_duration(now - fit_started_) + ")   ETA " +
                   (eta < 0 ? std::string("warming up") : format_duration(eta)) + " (fit " +
                   (fit_eta < 0 ? std::string("?") : format_duration(fit_eta)) + ")";
  double ips = items_per_s();
  l2 += "   items/s " + (ips < 0 ? std::string("?") : fmt("%.0f", ips));
  if (has_lr_) l2 += "   lr " + value_str("lr", lr_);
  put(f, x + 2, y + 1, l1, 0, w - 4);
  put(f, x + 2, y + 2, l2, 0, w - 4);
}

void DashboardModel::draw_metrics(Frame& f, int x, int y, int w, int h) const {
  box(f, x, y, w, h, "metrics");
  const int inner = w - 4;
  const int cw = inner >= 4 * 9 + 14 ? 9 : 8;  // narrow panels keep room for the names
  const int name_w = std::max(inner - 4 * cw, 6);
  const int cx = x + 2;
  put(f, cx + name_w, y + 1,
      cw == 9 ? "train ────────── valid ──────────" : "train ──────── valid ────────", 3,
      inner - name_w);
  put(f, cx, y + 2, "metric", 4);
  static const char* const kHead[] = {"latest", "avg", "latest", "avg"};
  for (int c = 0; c < 4; ++c) put_right(f, cx + name_w + (c + 1) * cw - 1, y + 2, kHead[c], 4);
  int row = y + 3;
  const int last_row = y + h - 3;  // the line above the border holds the last epoch
  for (const std::string& name : order_) {
    if (row > last_row) break;
    const Row& r = rows_.at(name);
    put(f, cx, row, name == "samples_per_s" ? "samples/s" : name, 0, name_w - 1);
    for (int si = 0; si < 2; ++si) {
      if (!r.has[si]) continue;
      put_right(f, cx + name_w + (2 * si + 1) * cw - 1, row, value_str(name, r.latest[si]), si + 1);
      put_right(f, cx + name_w + (2 * si + 2) * cw - 1, row, value_str(name, r.avg[si]), si + 1);
    }
    ++row;
  }
  if (has_epoch_)
    put(f, cx, y + h - 2, format_epoch(last_epoch_, info_.epochs), 3, inner);
  else
    put(f, cx, y + h - 2, "no epoch finished yet", 3, inner);
}

void DashboardModel::draw_system(Frame& f, int x, int y, int w, int h) const {
  box(f, x, y, w, h, "system");
  const int cx = x + 2, inner = w - 4;
  std::vector<std::string> lines;
  lines.push_back("CPU     " +
                  (sys_.cpu_percent < 0 ? std::string("?") : fmt("%.0f%%", sys_.cpu_percent)) +
                  (sys_.cores > 0 ? " of " + std::to_string(sys_.cores * 100) + "%" : ""));
  lines.push_back("RSS     " + bytes_str(sys_.rss_bytes));
  lines.push_back("threads " +
                  (sys_.threads < 0 ? std::string("?") : std::to_string(sys_.threads)));
  if (sys_.gpu < 0) {
    lines.push_back("GPU     none (host device)");
  } else {
    lines.push_back("GPU     cuda:" + std::to_string(sys_.gpu) + " util " +
                    (sys_.gpu_util < 0 ? std::string("n/a") : fmt("%.0f%%", sys_.gpu_util)));
    lines.push_back("tensors " + bytes_str(sys_.gpu_allocated) + " / pool " +
                    bytes_str(sys_.gpu_reserved));
    if (sys_.gpu_total > 0)
      lines.push_back("device  " + bytes_str(sys_.gpu_used) + " / " + bytes_str(sys_.gpu_total));
  }
  if (has_lr_) lines.push_back("lr      " + value_str("lr", lr_));
  for (int i = 0; i < int(lines.size()) && i < h - 2; ++i)
    put(f, cx, y + 1 + i, lines[size_t(i)], 0, inner);
}

void DashboardModel::draw_plot(Frame& f, int x, int y, int w, int h) const {
  box(f, x, y, w, h, "");
  // The title: the metrics as tabs, the current one highlighted, and the view.
  int tx = x + 2;
  for (const std::string& name : plot_names()) {
    std::string tab = " " + name + " ";
    if (tx + text_width(tab) >= x + w - 14) break;
    put(f, tx, y, tab, name == plot_ ? 6 : 4);
    tx += text_width(tab) + 1;
  }
  put_right(f, x + w - 2, y, view_ == PlotView::iterations ? " iterations " : " epochs ", 4);
  const int ix = x + 2, iy = y + 1, iw = w - 4, ih = h - 2;
  if (plot_.empty()) {
    put(f, ix, iy, "no values yet", 3, iw);
    return;
  }
  static const Points kNone;
  auto find = [](const auto& m, const std::string& k) -> const Points& {
    auto it = m.find(k);
    return it == m.end() ? kNone : it->second;
  };
  const std::string legend = "   ⣿ train  o valid";
  if (view_ == PlotView::epochs) {
    const Points &t = find(train_epoch_, plot_), &v = find(valid_epoch_, plot_);
    double x1 = 1;
    for (const auto* s : {&t, &v})
      if (!s->empty()) x1 = std::max(x1, s->back().first);
    subplot(f, ix, iy, iw, ih, plot_ + " per epoch" + legend, t, v, 1, x1, "epochs");
    return;
  }
  auto it = train_iter_.find(plot_);
  Points recent, whole;
  size_t per = 1;
  if (it != train_iter_.end()) {
    recent.assign(it->second.recent().begin(), it->second.recent().end());
    whole = it->second.whole();
    per = it->second.per_bucket();
  }
  const Points& v = find(valid_iter_, plot_);
  const bool split = iw >= 60;
  const int rw = split ? iw * 3 / 5 : iw;
  double r0 = recent.empty() ? 0 : recent.front().first,
         r1 = recent.empty() ? 1 : recent.back().first;
  subplot(f, ix, iy, rw, ih,
          plot_ + ": last " + std::to_string(recent.size()) + " iterations" + legend, recent, v, r0,
          std::max(r1, r0 + 1), "it");
  if (split) {
    double w0 = whole.empty() ? 0 : std::min(whole.front().first, r0);
    double w1 = std::max(r1, w0 + 1);
    std::string label = "whole run";
    if (per > 1) label += " (means of " + std::to_string(per) + ")";
    Points wv = v;  // valid points as they are: one per epoch
    subplot(f, ix + rw + 2, iy, iw - rw - 2, ih, label, whole, wv, w0, w1, "it");
  }
}

void DashboardModel::draw_help(Frame& f, int x, int y, int w, int h) const {
  box(f, x, y, w, h, "help");
  static const char* const kLines[] = {
      "q          stop after the current step and save a checkpoint (again: quit now)",
      "p, space   pause / resume training",
      "tab, →     next metric plot          shift-tab, ←  previous metric plot",
      "↑, ↓, e    iterations (recent window + whole run) or epochs",
      "?, h, esc  this help",
      "Ctrl-C     like q; a second Ctrl-C kills the program",
  };
  int row = y + 1;
  for (const char* l : kLines)
    if (row < y + h - 1) put(f, x + 2, row++, l, 0, w - 4);
}

}  // namespace ember::train::detail

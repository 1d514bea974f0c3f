// ember/train/dashboard: the model, the layout and the plots without a terminal (the terminal
// side runs under tmux in tests/train/dashboard_tmux.sh), and the Learner's side of it: the
// renderer's stop request and what each step reports.
#include "ember/train/dashboard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "ember/train/detail/dashboard_view.h"
#include "store/store_test_util.h"
#include "train/synthetic.h"

namespace ember::train {
namespace {

using detail::DashboardModel;
using detail::Frame;
using detail::Series;

int columns(const std::string& utf8) {
  int n = 0;
  for (unsigned char c : utf8) n += (c & 0xC0) != 0x80;
  return n;
}

bool has(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return true;
  return false;
}

int braille_cells(const std::vector<std::string>& lines) {
  int n = 0;
  for (const auto& l : lines)
    for (size_t i = 0; i + 2 < l.size(); ++i)
      if (static_cast<unsigned char>(l[i]) == 0xE2 &&
          (static_cast<unsigned char>(l[i + 1]) & 0xFC) == 0xA0)
        ++n;
  return n;
}

Progress step(Split split, int64_t epoch, int64_t s, int64_t steps, double loss) {
  Progress p;
  p.split = split;
  p.epoch = epoch;
  p.epochs = 3;
  p.step = s;
  p.steps = steps;
  p.elapsed_s = 0.1 * double(s);
  p.metrics = {{"loss", loss}, {"accuracy", 0.5 + 0.001 * double(s)}};
  p.loss = loss * 1.5;
  p.lr = 0.01;
  p.samples = 16;
  return p;
}

// Two epochs of 50 training steps (0.1 s each) and 10 validation steps, then 20 more steps.
DashboardModel running_model() {
  DashboardModel m;
  m.fit_start({.epochs = 3, .start_epoch = 1, .train_steps = 50, .valid_steps = 10}, 0);
  double t = 0;
  for (int64_t e = 1; e <= 2; ++e) {
    for (int64_t s = 1; s <= 50; ++s)
      m.progress(step(Split::train, e, s, 50, 1.0 / double(s)), t += 0.1);
    for (int64_t s = 1; s <= 10; ++s) m.progress(step(Split::valid, e, s, 10, 0.4), t += 0.05);
    m.epoch_end({.epoch = e,
                 .seconds = 5.5,
                 .train = {{"loss", 0.3 / double(e)}, {"accuracy", 0.55}},
                 .valid = {{"loss", 0.4 / double(e)}, {"accuracy", 0.6}}});
  }
  for (int64_t s = 1; s <= 20; ++s) m.progress(step(Split::train, 3, s, 50, 0.2), t += 0.1);
  return m;
}

TEST(TrainDashboard, SeriesKeepsRecentExactlyAndWholeDownsampled) {
  Series s(/*recent=*/8, /*buckets=*/4);
  for (int i = 1; i <= 20; ++i) s.add(i, i * 10);
  s.add(21, NAN);  // skipped
  EXPECT_EQ(s.count(), 20u);
  ASSERT_EQ(s.recent().size(), 8u);
  EXPECT_EQ(s.recent().front().first, 13);
  EXPECT_EQ(s.recent().back().second, 200);
  // 20 points in at most 4 buckets: runs of 8 (means of 1..8, 9..16) and the last 4.
  auto w = s.whole();
  EXPECT_EQ(s.per_bucket(), 8u);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_DOUBLE_EQ(w[0].first, 4.5);
  EXPECT_DOUBLE_EQ(w[0].second, 45);
  EXPECT_DOUBLE_EQ(w[1].first, 12.5);
  EXPECT_DOUBLE_EQ(w[2].first, 18.5);
  EXPECT_DOUBLE_EQ(w[2].second, 185);
}

TEST(TrainDashboard, SeriesMemoryStaysBounded) {
  Series s(16, 32);
  for (int i = 0; i < 100000; ++i) s.add(i, std::sin(i * 0.01));
  EXPECT_LE(s.whole().size(), 32u);
  EXPECT_EQ(s.recent().size(), 16u);
  EXPECT_EQ(s.count(), 100000u);
  // The means span the whole history.
  EXPECT_LT(s.whole().front().first, 5000);  // the first run of 4096
  EXPECT_GT(s.whole().back().first, 95000);
}

TEST(TrainDashboard, BrailleLineAndMarkers) {
  Frame f(4, std::vector<detail::Cell>(10));
  std::vector<std::pair<double, double>> rising = {{0, 0}, {9, 1}}, point = {{9, 1}};
  detail::plot_braille(f, 0, 0, 10, 4, {{&rising, 1}, {&point, 2}}, 0, 9, 0, 1);
  auto text = detail::frame_text(f);
  // The diagonal: the bottom-left cell has the lowest-left dot (0x40), the top-right a marker.
  const std::string& corner = f[3][0].glyph;  // U+2800 + dot bits, in UTF-8
  ASSERT_EQ(corner.size(), 3u);
  const unsigned bits = ((unsigned(static_cast<unsigned char>(corner[1])) & 0x3F) << 6 |
                         (unsigned(static_cast<unsigned char>(corner[2])) & 0x3F)) -
                        0x800;
  EXPECT_TRUE(bits & 0x40) << corner;
  EXPECT_EQ(f[3][0].style, 1);
  EXPECT_EQ(f[0][9].glyph, "o");
  EXPECT_EQ(f[0][9].style, 2);
  EXPECT_GE(braille_cells(text), 10);
  for (const auto& row : text) EXPECT_EQ(columns(row), 10);
}

TEST(TrainDashboard, FullFrameShowsEveryPanel) {
  DashboardModel m = running_model();
  detail::SystemSample sys;
  sys.cpu_percent = 97;
  sys.cores = 2;
  sys.rss_bytes = 50 << 20;
  sys.threads = 3;
  m.set_system(sys);
  m.message("resumed from runs/x/epoch-0001.safetensors (epoch 2, batch 0)");
  auto text = detail::frame_text(m.render(120, 32, 11.0));
  ASSERT_EQ(text.size(), 32u);
  for (const auto& row : text) EXPECT_EQ(columns(row), 120) << row;
  std::string all;
  for (const auto& l : text) all += l + "\n";
  EXPECT_TRUE(has(text, "ember training · RUNNING")) << all;
  EXPECT_TRUE(has(text, "mode train   epoch 3/3   iteration 20/50   (run 120)")) << all;
  EXPECT_TRUE(has(text, "ETA 3.0s")) << all;     // 30 steps left at 0.1 s each
  EXPECT_TRUE(has(text, "items/s 160")) << all;  // 16 samples every 0.1 s
  EXPECT_TRUE(has(text, "lr 0.01")) << all;
  EXPECT_TRUE(has(text, "0.3000   0.2000   0.6000   0.4000")) << all;  // loss: batch, avg; valid
  EXPECT_TRUE(has(text, "epoch 2/3 5.5s train loss 0.1500")) << all;
  EXPECT_TRUE(has(text, "CPU     97% of 200%")) << all;
  EXPECT_TRUE(has(text, "RSS     50.0 MiB")) << all;
  EXPECT_TRUE(has(text, "GPU     none")) << all;
  EXPECT_TRUE(has(text, "loss: last 120 iterations")) << all;
  EXPECT_TRUE(has(text, "whole run")) << all;
  EXPECT_TRUE(has(text, "resumed from runs/x")) << all;
  EXPECT_GT(braille_cells(text), 40) << all;
}

TEST(TrainDashboard, SmallFrameFitsAndTooSmallSaysSo) {
  DashboardModel m = running_model();
  auto text = detail::frame_text(m.render(80, 24, 11.0));
  ASSERT_EQ(text.size(), 24u);
  for (const auto& row : text) EXPECT_EQ(columns(row), 80) << row;
  EXPECT_TRUE(has(text, "┌─ status"));
  EXPECT_TRUE(has(text, "┌─ metrics"));
  EXPECT_TRUE(has(text, "┌─ system"));
  EXPECT_TRUE(has(text, " iterations "));
  EXPECT_GT(braille_cells(text), 10);
  auto tiny = detail::frame_text(m.render(30, 8, 11.0));
  EXPECT_TRUE(has(tiny, "too small"));
  for (const auto& row : tiny) EXPECT_EQ(columns(row), 30);
}

TEST(TrainDashboard, KeysSwitchPlotsViewsAndHelp) {
  DashboardModel m = running_model();
  EXPECT_EQ(m.plot_names(), (std::vector<std::string>{"loss", "accuracy", "lr"}));
  EXPECT_EQ(m.plot_name(), "loss");
  m.next_plot(1);
  EXPECT_EQ(m.plot_name(), "accuracy");
  m.next_plot(-2);
  EXPECT_EQ(m.plot_name(), "lr");
  m.next_plot(1);
  EXPECT_EQ(m.plot_name(), "loss");
  m.toggle_view();
  EXPECT_EQ(m.view(), detail::PlotView::epochs);
  auto text = detail::frame_text(m.render(120, 32, 11.0));
  EXPECT_TRUE(has(text, "loss per epoch"));
  EXPECT_TRUE(has(text, "2 epochs"));
  m.toggle_help();
  text = detail::frame_text(m.render(120, 32, 11.0));
  EXPECT_TRUE(has(text, "pause / resume training"));
  m.set_mode(detail::Mode::paused);
  text = detail::frame_text(m.render(120, 32, 11.0));
  EXPECT_TRUE(has(text, "ember training · PAUSED"));
}

TEST(TrainDashboard, EtaAfterWarmUpAndForTheFit) {
  DashboardModel m;
  m.fit_start({.epochs = 2, .start_epoch = 1, .train_steps = 100, .valid_steps = 0}, 0);
  // A slow first step (warm-up), then 0.1 s per step.
  m.progress(step(Split::train, 1, 1, 100, 1), 5.0);
  EXPECT_LT(m.eta_s(5.0), 0);  // warming up
  double t = 5.0;
  for (int64_t s = 2; s <= 10; ++s) m.progress(step(Split::train, 1, s, 100, 1), t += 0.1);
  EXPECT_NEAR(m.eta_s(t), 9.0, 1e-9);       // 90 steps left
  EXPECT_NEAR(m.fit_eta_s(t), 19.0, 1e-9);  // and one more epoch of 100
  EXPECT_NEAR(m.items_per_s(), 160, 1e-6);
  EXPECT_EQ(m.global_step(), 10);
}

TEST(TrainDashboard, ResumedHistoryFillsTheEpochPlot) {
  DashboardModel m;
  FitInfo info{.epochs = 5, .start_epoch = 3, .train_steps = 10, .valid_steps = 2};
  info.history = {{.epoch = 1, .seconds = 1, .train = {{"loss", 1.0}}, .valid = {{"loss", 1.1}}},
                  {.epoch = 2, .seconds = 1, .train = {{"loss", 0.5}}, .valid = {{"loss", 0.7}}}};
  m.fit_start(info, 0);
  m.toggle_view();
  auto text = detail::frame_text(m.render(100, 30, 0));
  EXPECT_TRUE(has(text, "loss per epoch"));
  EXPECT_TRUE(has(text, "epoch 2/5 1.0s train loss 0.5000 | valid loss 0.7000"));
  EXPECT_GT(braille_cells(text), 5);
  m.progress(step(Split::train, 3, 1, 10, 0.4), 0.1);
  EXPECT_EQ(m.global_step(), 21);  // the iteration count continues the run's
}

TEST(TrainDashboard, RowAnsiStylesAndResets) {
  std::vector<detail::Cell> row = {{"a", 0}, {"b", 1}, {"c", 1}, {"d", 2}};
  EXPECT_EQ(detail::row_ansi(row), "\x1b[0ma\x1b[0;36mbc\x1b[0;33md\x1b[0m");
}

TEST(TrainDashboard, BadOptionsThrow) {
  EXPECT_THROW(dashboard_renderer({.min_interval_s = -1}), ValueError);
}

// What `./train > log` gets: the plain renderer over Fashion-MNIST's ten epochs (937 training
// batches of 64, 10 validation batches of 1000, the example's metrics) stays far below 100 KB,
// with no escape codes and no carriage returns.
TEST(TrainDashboard, PlainLogOfTenFashionMnistEpochsIsSmall) {
  std::ostringstream os;
  auto r = plain_renderer(os);
  r->on_fit_start({.epochs = 10, .start_epoch = 1, .train_steps = 937, .valid_steps = 10});
  for (int64_t e = 1; e <= 10; ++e) {
    for (int64_t s = 1; s <= 937; ++s) {
      Progress p = step(Split::train, e, s, 937, 0.3123456);
      p.epochs = 10;
      p.metrics = {
          {"loss", 0.3123456}, {"accuracy", 0.8912345}, {"lr", 0.001}, {"samples_per_s", 2512.25}};
      r->on_progress(p);
    }
    for (int64_t s = 1; s <= 10; ++s) {
      Progress p = step(Split::valid, e, s, 10, 0.35);
      p.epochs = 10;
      p.metrics = {{"loss", 0.35}, {"accuracy", 0.88}, {"f1", 0.879}};
      r->on_progress(p);
    }
    r->on_epoch_end(
        {.epoch = e,
         .seconds = 31.25,
         .train = {{"loss", 0.31}, {"accuracy", 0.89}, {"lr", 0.001}, {"samples_per_s", 2512.25}},
         .valid = {{"loss", 0.35}, {"accuracy", 0.88}, {"f1", 0.879}}});
  }
  r->on_fit_end();
  const std::string log = os.str();
  EXPECT_LT(log.size(), 20000u);
  EXPECT_EQ(log.find('\x1b'), std::string::npos);
  EXPECT_EQ(log.find('\r'), std::string::npos);
  EXPECT_NE(log.find("epoch 10/10 31.2s train loss"), std::string::npos);
}

// The Learner side: a renderer that asks to stop after 5 steps stops the fit like Ctrl-C, with a
// mid-epoch checkpoint; every step reports its batch loss, lr and samples.
class StopAfter final : public Renderer {
 public:
  explicit StopAfter(int64_t n) : n_(n) {}
  void on_progress(const Progress& p) override {
    if (p.split == Split::train) {
      ++steps_;
      EXPECT_TRUE(std::isfinite(p.loss) && p.loss > 0);
      EXPECT_DOUBLE_EQ(p.lr, 1e-2);
      EXPECT_EQ(p.samples, 16);
    }
  }
  void on_epoch_end(const EpochRecord&) override {}
  void on_message(std::string_view text) override { messages_.emplace_back(text); }
  bool stop_requested() override { return steps_ >= n_; }
  int64_t steps_ = 0, n_;
  std::vector<std::string> messages_;
};

TEST(TrainDashboard, RendererStopRequestStopsTheFitWithACheckpoint) {
  test::ScratchDir dir;
  auto train_ds = test::blobs(128, 4, 8, 11);
  data::DataLoader<data::Example> loader(train_ds, {.batch_size = 16});
  manual_seed(5);
  test::BlobNet net;
  optim::Adam opt(net.parameters(), {.lr = 1e-2});
  auto r = std::make_shared<StopAfter>(5);
  Learner learner(net, opt, {.epochs = 3, .checkpoint_dir = dir.path.string(), .renderer = r});
  FitResult res = learner.fit(loader, train::classification_step(net));
  EXPECT_TRUE(res.interrupted);
  EXPECT_EQ(r->steps_, 5);
  EXPECT_EQ(std::filesystem::path(res.checkpoint).filename(),
            "epoch-0001-step-0000005.safetensors");
  ASSERT_FALSE(r->messages_.empty());
  EXPECT_NE(r->messages_.back().find("interrupted: saved"), std::string::npos);
}

}  // namespace
}  // namespace ember::train

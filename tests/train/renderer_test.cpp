// ember/train/renderer: synthetic events into renderers writing to a string stream.
#include "ember/train/renderer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "ember/error.h"

namespace ember::train {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

Progress progress(Split split, int64_t step, int64_t steps, double elapsed, double loss) {
  Progress p;
  p.split = split;
  p.epoch = 2;
  p.epochs = 3;
  p.step = step;
  p.steps = steps;
  p.elapsed_s = elapsed;
  p.eta_s = step > 0 ? elapsed / double(step) * double(steps - step) : NAN;
  p.metrics = {{"loss", loss}, {"accuracy", 0.85125}};
  return p;
}

EpochRecord record() {
  return {.epoch = 2,
          .seconds = 75.5,
          .train = {{"loss", 0.41234}, {"accuracy", 0.85125}, {"lr", 0.001}},
          .valid = {{"loss", 0.44}, {"accuracy", 0.84}}};
}

TEST(TrainRenderer, FormatDuration) {
  EXPECT_EQ(format_duration(7.24), "7.2s");
  EXPECT_EQ(format_duration(0), "0.0s");
  EXPECT_EQ(format_duration(-3), "0.0s");
  EXPECT_EQ(format_duration(59.96), "1:00");
  EXPECT_EQ(format_duration(245), "4:05");
  EXPECT_EQ(format_duration(3723.9), "1:02:03");
  EXPECT_EQ(format_duration(NAN), "?");
  EXPECT_EQ(split_name(Split::train), "train");
  EXPECT_EQ(split_name(Split::valid), "valid");
}

TEST(TrainRenderer, FormatMetric) {
  EXPECT_EQ(format_metric("loss", 0.41234), "loss 0.4123");
  EXPECT_EQ(format_metric("accuracy", 0.85125), "accuracy 0.8512");  // 0.85125 is just below
  EXPECT_EQ(format_metric("accuracy", 1), "accuracy 1.0000");
  EXPECT_EQ(format_metric("loss", 0), "loss 0.0000");
  EXPECT_EQ(format_metric("loss", 1.234e-5), "loss 1.234e-05");
  EXPECT_EQ(format_metric("loss", 2.5e7), "loss 2.5e+07");
  EXPECT_EQ(format_metric("loss", NAN), "loss nan");
  EXPECT_EQ(format_metric("loss", INFINITY), "loss inf");
  EXPECT_EQ(format_metric("lr", 0.001), "lr 0.001");
  EXPECT_EQ(format_metric("lr", 3.14159e-4), "lr 0.000314");
  EXPECT_EQ(format_metric("samples_per_s", 12345.6), "12346 samples/s");
}

TEST(TrainRenderer, PlainExactLines) {
  std::ostringstream os;
  auto r = plain_renderer(os, 25);
  r->on_fit_start({.epochs = 3, .start_epoch = 2, .train_steps = 8, .valid_steps = 3});
  r->on_message("resumed from runs/ckpt-1");
  for (int64_t s = 1; s <= 8; ++s) r->on_progress(progress(Split::train, s, 8, 2.0 * s, 1.0 / s));
  for (int64_t s = 1; s <= 3; ++s) r->on_progress(progress(Split::valid, s, 3, 1.0 * s, 0.5));
  r->on_epoch_end(record());
  r->on_fit_end();
  EXPECT_EQ(os.str(),
            "resumed from runs/ckpt-1\n"
            "epoch 2/3 train 25% 2/8 0:04<0:12 loss 0.5000 accuracy 0.8512\n"
            "epoch 2/3 train 50% 4/8 0:08<0:08 loss 0.2500 accuracy 0.8512\n"
            "epoch 2/3 train 75% 6/8 0:12<0:04 loss 0.1667 accuracy 0.8512\n"
            "epoch 2/3 train 100% 8/8 0:16<0:00 loss 0.1250 accuracy 0.8512\n"
            "epoch 2/3 valid 33% 1/3 0:01<0:02 loss 0.5000 accuracy 0.8512\n"
            "epoch 2/3 valid 66% 2/3 0:02<0:01 loss 0.5000 accuracy 0.8512\n"
            "epoch 2/3 valid 100% 3/3 0:03<0:00 loss 0.5000 accuracy 0.8512\n"
            "epoch 2/3 1:15 train loss 0.4123 accuracy 0.8512 lr 0.001 | valid loss 0.4400 "
            "accuracy 0.8400\n");
}

TEST(TrainRenderer, PlainEveryAndResume) {
  std::ostringstream none;
  auto quiet = plain_renderer(none, 0);
  for (int64_t s = 1; s <= 4; ++s) quiet->on_progress(progress(Split::train, s, 4, 1, 1));
  EXPECT_EQ(none.str(), "");
  // A pass resumed at step 5 of 10 prints the bucket it is in once, then the next ones.
  std::ostringstream os;
  auto r = plain_renderer(os, 50);
  for (int64_t s = 5; s <= 10; ++s) r->on_progress(progress(Split::train, s, 10, 1, 1));
  EXPECT_EQ(count(os.str(), "\n"), 2u);
  EXPECT_NE(os.str().find("train 50% 5/10"), std::string::npos);
  EXPECT_NE(os.str().find("train 100% 10/10"), std::string::npos);
  // The same epoch again in a new fit starts afresh.
  r->on_fit_start({.epochs = 3});
  r->on_progress(progress(Split::train, 10, 10, 1, 1));
  EXPECT_EQ(count(os.str(), "\n"), 3u);
  EXPECT_THROW(plain_renderer(os, 101), ValueError);
  EXPECT_THROW(plain_renderer(os, -1), ValueError);
}

struct FakeClock {
  double now = 0;
  TerminalOptions options(int width = 100) {
    return {.width = width, .min_interval_s = 0.1, .clock = [this] { return now; }};
  }
};

TEST(TrainRenderer, TerminalLineBarAndEta) {
  std::ostringstream os;
  auto r = terminal_renderer(os, {.width = 100, .min_interval_s = 0});
  r->on_fit_start({.epochs = 3, .train_steps = 937});
  Progress p = progress(Split::train, 312, 937, 12.5, 0.41234);
  p.eta_s = 25.3;
  r->on_progress(p);
  const std::string out = os.str();
  EXPECT_EQ(out.rfind("\r\x1b[K", 0), 0u) << out;  // redrawn in place, rest of line cleared
  EXPECT_EQ(out.find('\n'), std::string::npos);
  // 100 columns: 99 usable; the bar takes what the rest leaves (at most 30 cells).
  std::string line = out.substr(4);
  EXPECT_EQ(line,
            "epoch 2/3 train [#########.....................] 312/937 0:12<0:25 loss 0.4123 "
            "accuracy 0.8512");
  // A narrow terminal shrinks the bar to 10 cells and cuts the line to width - 1.
  std::ostringstream narrow;
  auto n = terminal_renderer(narrow, {.width = 50, .min_interval_s = 0});
  n->on_progress(p);
  std::string nl = narrow.str().substr(4);
  EXPECT_EQ(nl.size(), 49u);
  EXPECT_EQ(nl.rfind("epoch 2/3 train [###.......] 312/937 0:12<0:25 lo", 0), 0u) << nl;
}

TEST(TrainRenderer, TerminalThrottlesByTime) {
  FakeClock clock;
  std::ostringstream os;
  auto r = terminal_renderer(os, clock.options());
  // 10 steps 0.03 s apart: the first, every one at least 0.1 s after the last drawn, and the
  // last step are drawn.
  for (int64_t s = 1; s <= 10; ++s) {
    clock.now = 0.03 * double(s);
    r->on_progress(progress(Split::train, s, 10, clock.now, 1));
  }
  std::string out = os.str();
  EXPECT_EQ(count(out, "\r\x1b[K"), 4u) << out;  // steps 1, 5, 9, 10
  for (const char* drawn : {" 1/10 ", " 5/10 ", " 9/10 ", " 10/10 "})
    EXPECT_NE(out.find(drawn), std::string::npos) << drawn;
  EXPECT_EQ(out.find(" 2/10 "), std::string::npos);
  // A new pass is drawn at once, however soon.
  r->on_progress(progress(Split::valid, 1, 4, 0, 1));
  EXPECT_NE(os.str().find("epoch 2/3 valid ["), std::string::npos);
}

TEST(TrainRenderer, TerminalSummaryAndMessages) {
  FakeClock clock;
  std::ostringstream os;
  auto r = terminal_renderer(os, clock.options());
  r->on_fit_start({.epochs = 3});
  r->on_progress(progress(Split::train, 3, 8, 1, 1));
  r->on_message("early stopping: valid.loss did not improve");
  std::string out = os.str();
  // The message gets its own line, then the live line comes back below it.
  size_t msg = out.find("\r\x1b[Kearly stopping: valid.loss did not improve\n");
  ASSERT_NE(msg, std::string::npos) << out;
  EXPECT_NE(out.find("\r\x1b[Kepoch 2/3 train [", msg), std::string::npos);
  r->on_epoch_end(record());
  EXPECT_NE(os.str().find("\r\x1b[Kepoch 2/3 1:15 train loss 0.4123 accuracy 0.8512 lr 0.001 | "
                          "valid loss 0.4400 accuracy 0.8400\n"),
            std::string::npos);
  // After the summary nothing is live: a message is not followed by a redraw.
  size_t before = os.str().size();
  r->on_message("done");
  EXPECT_EQ(os.str().substr(before), "\r\x1b[Kdone\n");
  r->on_fit_end();
  EXPECT_EQ(os.str().substr(before), "\r\x1b[Kdone\n");
  EXPECT_THROW(terminal_renderer(os, {.min_interval_s = -1}), ValueError);
}

TEST(TrainRenderer, SilentAndUnknownLength) {
  auto s = silent_renderer();
  s->on_fit_start({});
  s->on_progress(progress(Split::train, 1, 1, 1, 1));
  s->on_epoch_end(record());
  s->on_message("x");
  s->on_fit_end();
  std::ostringstream os;
  auto r = terminal_renderer(os, {.width = 80, .min_interval_s = 0});
  Progress p = progress(Split::train, 7, 0, 3, 1);
  p.eta_s = std::numeric_limits<double>::quiet_NaN();
  r->on_progress(p);
  EXPECT_NE(os.str().find("train [" + std::string(24, '.') + "] 7 0:03<? loss"), std::string::npos)
      << os.str();
}

}  // namespace
}  // namespace ember::train

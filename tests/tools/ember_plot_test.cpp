// ember-plot, the installed tool: a run directory (metric log and event files) to report.html,
// its errors, and the report rendered by headless Chromium (when /usr/bin/chromium exists): the
// screenshot is not blank and every plot's frame holds line pixels of its series' colours.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>

#include "ember/train/metric_log.h"
#include "ember/train/report.h"
#include "ember/train/tensorboard.h"
#include "store/store_test_util.h"

#ifdef EMBER_HAVE_STB
#include <stb_image.h>
#endif

namespace ember {
namespace {

namespace fs = std::filesystem;

// Runs a shell command; its exit status, with stdout and stderr in `out`.
int run(const std::string& cmd, std::string& out, const test::ScratchDir& dir) {
  const std::string log = dir.file("command.log");
  const int rc = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  out = test::read_bytes(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// A run as the Learner leaves it: metrics.csv and an event file in tb/.
void write_run(const std::string& dir) {
  std::vector<train::EpochRecord> h;
  for (int e = 1; e <= 4; ++e)
    h.push_back({.epoch = e,
                 .seconds = 1,
                 .train = {{"loss", 2.0 / e}, {"accuracy", 0.5 + 0.1 * e}},
                 .valid = {{"loss", 2.2 / e + 0.1}, {"accuracy", 0.45 + 0.1 * e}}});
  h[2].valid[1].second = NAN;  // a gap in valid accuracy
  train::write_metric_log(dir + "/metrics.csv", h);
  train::TensorBoardWriter w(dir + "/tb");
  for (int s = 1; s <= 40; ++s) w.add_scalar("batch/train/loss", 2.0 / (1 + 0.1 * s), s);
}

const std::string kTool = EMBER_PLOT_TOOL;

TEST(EmberPlot, WritesTheReportOfARunDirectory) {
  test::ScratchDir dir;
  write_run(dir.path.string());
  std::string out;
  ASSERT_EQ(run("'" + kTool + "' '" + dir.path.string() + "/'", out, dir), 0) << out;
  EXPECT_NE(out.find("(3 plots)"), std::string::npos) << out;
  const std::string html = test::read_bytes(dir.file("report.html"));
  EXPECT_NE(html.find("<h1>Training run " + dir.path.filename().string() + "</h1>"),
            std::string::npos);
  for (const char* t :
       {">loss per epoch</text>", ">accuracy per epoch</text>", ">loss per iteration</text>",
        ">epoch</text>", ">iteration</text>", "valid (1 non-finite not drawn)"})
    EXPECT_NE(html.find(t), std::string::npos) << t;
  // -o, --title, and a log file named directly.
  ASSERT_EQ(run("'" + kTool + "' '" + dir.file("metrics.csv") + "' -o '" + dir.file("r.html") +
                    "' --title Mine",
                out, dir),
            0)
      << out;
  EXPECT_NE(test::read_bytes(dir.file("r.html")).find("<h1>Mine</h1>"), std::string::npos);
}

TEST(EmberPlot, Errors) {
  test::ScratchDir dir;
  std::string out;
  EXPECT_EQ(run("'" + kTool + "'", out, dir), 2);
  EXPECT_NE(out.find("usage: ember-plot"), std::string::npos) << out;
  EXPECT_EQ(run("'" + kTool + "' '" + dir.file("nothing") + "'", out, dir), 1);
  EXPECT_NE(out.find("does not exist"), std::string::npos) << out;
  fs::create_directories(dir.file("empty"));
  EXPECT_EQ(run("'" + kTool + "' '" + dir.file("empty") + "'", out, dir), 1);
  EXPECT_NE(out.find("found neither"), std::string::npos) << out;
  fs::create_directories(dir.file("bad"));
  test::write_bytes(dir.file("bad/metrics.csv"), "epoch,seconds\n1,2\n");
  fs::create_directories(dir.file("bad/tb"));
  test::write_bytes(dir.file("bad/tb/events.out.tfevents.1.h"), "garbage!garbage!");
  EXPECT_EQ(run("'" + kTool + "' '" + dir.file("bad") + "'", out, dir), 1);
  EXPECT_NE(out.find("length CRC"), std::string::npos) << out;
}

TEST(EmberPlot, ReportRendersInChromium) {
  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium)) GTEST_SKIP() << chromium << " is not installed (Debian: chromium)";
#ifndef EMBER_HAVE_STB
  GTEST_SKIP() << "stb_image (Debian: libstb-dev) is needed to read the screenshot";
#else
  test::ScratchDir dir;
  write_run(dir.path.string());
  std::string out;
  ASSERT_EQ(run("'" + kTool + "' '" + dir.path.string() + "'", out, dir), 0) << out;
  // 720 pixels wide: one plot a row.
  const std::string png = dir.file("shot.png");
  const int rc = run("timeout 60 " + chromium +
                         " --headless --no-sandbox --disable-gpu --hide-scrollbars "
                         "--no-first-run --user-data-dir='" +
                         dir.file("profile") + "' --window-size=720,1900 --screenshot='" + png +
                         "' 'file://" + dir.file("report.html") + "'",
                     out, dir);
  ASSERT_EQ(rc, 0) << out;
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(png.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr) << stbi_failure_reason();
  std::unique_ptr<unsigned char, void (*)(void*)> owner(px, stbi_image_free);
  ASSERT_EQ(w, 720);
  auto near = [&](int x, int y, int r, int g, int b) {
    const unsigned char* p = px + (size_t(y) * size_t(w) + size_t(x)) * 3;
    return std::abs(p[0] - r) <= 8 && std::abs(p[1] - g) <= 8 && std::abs(p[2] - b) <= 8;
  };
  // Not blank: more than the page's background.
  std::set<int> colours;
  for (int y = 0; y < h; y += 3)
    for (int x = 0; x < w; x += 3) {
      const unsigned char* p = px + (size_t(y) * size_t(w) + size_t(x)) * 3;
      colours.insert(p[0] << 16 | p[1] << 8 | p[2]);
    }
  EXPECT_GT(colours.size(), 20u);
  // The plots' frames: rows mostly of the svg border colour (#ddd), paired top and bottom.
  std::vector<int> borders;
  for (int y = 0; y < h; ++y) {
    int n = 0;
    for (int x = 0; x < w; ++x) n += near(x, y, 0xdd, 0xdd, 0xdd);
    if (n > 600 && (borders.empty() || y > borders.back() + 2)) borders.push_back(y);
  }
  ASSERT_EQ(borders.size(), 6u) << "expected the frames of 3 plots";
  const int want_orange[] = {1, 1, 0};  // valid in the per-epoch plots
  for (int k = 0; k < 3; ++k) {
    int blue = 0, orange = 0;
    for (int y = borders[2 * k]; y < borders[2 * k + 1]; ++y)
      for (int x = 0; x < w; ++x) {
        blue += near(x, y, 0x1f, 0x77, 0xb4);
        orange += near(x, y, 0xff, 0x7f, 0x0e);
      }
    EXPECT_GT(blue, 150) << "plot " << k;
    if (want_orange[k])
      EXPECT_GT(orange, 150) << "plot " << k;
    else
      EXPECT_EQ(orange, 0) << "plot " << k;
  }
#endif
}

}  // namespace
}  // namespace ember

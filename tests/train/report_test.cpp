// ember/train/report: the plots a run gives, and the SVG and HTML they become (self-contained,
// labelled, and sane for NaN, infinities, one point and constant series). The page rendered in
// a browser is checked in tests/tools/ember_plot_test.cpp.
#include "ember/train/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "store/store_test_util.h"

namespace ember::train {
namespace {

std::vector<EpochRecord> history() {
  return {{.epoch = 1, .train = {{"loss", 1.0}, {"accuracy", 0.5}}, .valid = {{"loss", 1.2}}},
          {.epoch = 2, .train = {{"loss", 0.6}, {"accuracy", 0.7}}, .valid = {{"loss", 0.9}}},
          {.epoch = 3, .train = {{"loss", 0.4}, {"accuracy", 0.8}}, .valid = {{"loss", 0.8}}}};
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Every number in the SVG's coordinates is finite and inside the picture.
void expect_sane_coordinates(const std::string& svg) {
  EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
  std::regex coord(R"((?:cx|cy|x1|x2|y1|y2)="(-?[0-9.]+)\")");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), coord); it != std::sregex_iterator();
       ++it) {
    const double v = std::stod((*it)[1]);
    EXPECT_GE(v, 0) << (*it)[0];
    EXPECT_LE(v, 640) << (*it)[0];
  }
}

TEST(Report, PlotsPerEpochAndPerIteration) {
  std::vector<ScalarEvent> scalars = {{"batch/train/loss", 2, 0, 0.7f},
                                      {"batch/train/loss", 1, 0, 0.9f},
                                      {"batch/train/lr", 1, 0, 0.1f},
                                      {"train/loss", 1, 0, 5.0f}};  // the history has epochs
  auto plots = run_plots(history(), scalars);
  ASSERT_EQ(plots.size(), 4u);
  EXPECT_EQ(plots[0].title, "loss per epoch");
  ASSERT_EQ(plots[0].series.size(), 2u);
  EXPECT_EQ(plots[0].series[0].label, "train");
  EXPECT_EQ(plots[0].series[1].label, "valid");
  EXPECT_EQ(plots[0].series[1].points.back(), std::make_pair(3.0, 0.8));
  EXPECT_EQ(plots[1].title, "accuracy per epoch");
  EXPECT_EQ(plots[1].series.size(), 1u);
  EXPECT_EQ(plots[2].title, "loss per iteration");
  EXPECT_EQ(plots[2].x_label, "iteration");
  // Sorted by step (files of a resumed run come in name order).
  EXPECT_EQ(plots[2].series[0].points.front(), std::make_pair(1.0, double(0.9f)));
  EXPECT_EQ(plots[3].title, "lr per iteration");
  // Without a history the per-epoch scalars stand in for it.
  plots = run_plots({}, scalars);
  ASSERT_EQ(plots.size(), 3u);
  EXPECT_EQ(plots[0].title, "loss per epoch");
  EXPECT_EQ(plots[0].series[0].points.front(), std::make_pair(1.0, 5.0));
}

TEST(Report, SvgHasAxesTicksLabelsLegendAndLines) {
  auto plots = run_plots(history());
  std::string svg = plot_svg(plots[0]);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find(">loss per epoch</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"axis-label\""), std::string::npos);
  EXPECT_NE(svg.find(">epoch</text>"), std::string::npos);
  EXPECT_NE(svg.find(">loss</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"legend\" x=\"98.00\" y=\"38.00\">train</text>"), std::string::npos)
      << svg;
  EXPECT_NE(svg.find(">valid</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"line\""), 2u);
  // Integral epochs get integral ticks: 1, 2, 3.
  for (const char* t : {">1</text>", ">2</text>", ">3</text>"})
    EXPECT_NE(svg.find(t), std::string::npos) << t;
  EXPECT_EQ(svg.find(">1.5</text>"), std::string::npos);
  expect_sane_coordinates(svg);
}

TEST(Report, NonFiniteValuesOnePointAndConstantSeries) {
  Plot p{"loss per epoch",
         "epoch",
         "loss",
         {{"train", {{1, 1.0}, {2, NAN}, {3, 0.5}, {4, INFINITY}, {5, 0.25}, {6, 0.2}}}}};
  std::string svg = plot_svg(p);
  expect_sane_coordinates(svg);
  EXPECT_NE(svg.find("train (2 non-finite not drawn)"), std::string::npos);
  // The path restarts after each gap: three pieces.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("class=\"line\" d=\"([^\"]*)\"")));
  EXPECT_EQ(count(m[1], "M"), 3u) << m[1];

  Plot one{"x", "epoch", "x", {{"valid", {{1, 42.0}}}}};
  svg = plot_svg(one);
  expect_sane_coordinates(svg);
  EXPECT_EQ(count(svg, "<circle"), 1u);
  EXPECT_NE(svg.find(">42</text>"), std::string::npos) << svg;  // a tick at the value

  Plot flat{"c", "iteration", "c", {{"train", {{1, 3.0}, {2, 3.0}, {3, 3.0}}}}};
  expect_sane_coordinates(plot_svg(flat));

  Plot none{"n", "epoch", "n", {{"train", {{1, NAN}, {2, -INFINITY}}}}};
  svg = plot_svg(none);
  expect_sane_coordinates(svg);
  EXPECT_NE(svg.find("no finite values"), std::string::npos);
}

TEST(Report, LongSeriesAreReducedKeepingTheirExtremes) {
  PlotSeries s{"train", {}};
  for (int i = 0; i < 100000; ++i)
    s.points.emplace_back(i, i == 54321 ? 100.0 : std::sin(i * 1e-3));
  std::string svg = plot_svg({"loss per iteration", "iteration", "loss", {s}});
  EXPECT_LT(svg.size(), 100000u);
  EXPECT_NE(svg.find(">100</text>"), std::string::npos);  // the spike sets the axis
  expect_sane_coordinates(svg);
}

TEST(Report, PageIsSelfContained) {
  test::ScratchDir dir;
  const std::string path = dir.file("report.html");
  write_report(path, "Run <a & b>", run_plots(history()));
  const std::string html = test::read_bytes(path);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<h1>Run &lt;a &amp; b&gt;</h1>"), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), 2u);
  for (const char* outside : {"<script", "http:", "https:", "src=", "href=", "@import", "url("})
    EXPECT_EQ(html.find(outside), std::string::npos) << outside;
  EXPECT_NE(report_html("empty", {}).find("No metrics."), std::string::npos);
}

}  // namespace
}  // namespace ember::train

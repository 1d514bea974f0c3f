// ember/train/metrics: golden values from torch (tests/gen/gen_train_metrics.py), exact state
// round trips, fresh(), and errors naming the metric.
#include "ember/train/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.h"

namespace ember::train {
namespace {

using nlohmann::json;

json load_cases() {
  std::ifstream in(std::string(EMBER_TEST_DATA) + "/train/metrics.json");
  return json::parse(in).at("cases");
}

StepOutput step_of(const json& b) {
  StepOutput s;
  auto shape = b.at("shape").get<std::vector<int64_t>>();
  s.output = tensor(b.at("logits").get<std::vector<double>>(), Shape(shape));
  auto tshape = b.at("target_shape").get<std::vector<int64_t>>();
  if (tshape.size() == 1)
    s.target = tensor(b.at("target").get<std::vector<int64_t>>(), Shape(tshape));
  else
    s.target = tensor(b.at("target").get<std::vector<double>>(), Shape(tshape));
  return s;
}

Average average_of(const std::string& s) {
  return s == "macro" ? Average::macro : s == "micro" ? Average::micro : Average::weighted;
}

MetricPtr class_metric(const std::string& kind, ClassMetricOptions o) {
  return kind == "precision" ? precision(o) : kind == "recall" ? recall(o) : f1_score(o);
}

// Every metric of a golden case with the key its expected value has in the file.
std::vector<std::pair<std::string, MetricPtr>> metrics_of(const json& c) {
  std::vector<std::pair<std::string, MetricPtr>> ms;
  ms.emplace_back("accuracy", accuracy());
  for (int64_t k : c.at("ks").get<std::vector<int64_t>>())
    ms.emplace_back("top" + std::to_string(k) + "_accuracy", top_k_accuracy(k));
  int64_t classes = c.at("num_classes").get<int64_t>();
  for (std::string kind : {"precision", "recall", "f1"})
    for (std::string avg : {"macro", "micro", "weighted"})
      ms.emplace_back(kind + "_" + avg, class_metric(kind, {classes, average_of(avg)}));
  return ms;
}

TEST(TrainMetrics, GoldenAccumulatedOverBatches) {
  for (const json& c : load_cases()) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    auto ms = metrics_of(c);
    for (auto& [key, m] : ms) EXPECT_TRUE(std::isnan(m->value())) << key;
    for (const json& b : c.at("batches")) {
      StepOutput s = step_of(b);
      StepContext ctx{.samples = s.output.size(0)};
      for (auto& [key, m] : ms) m->update(s, ctx);
    }
    for (auto& [key, m] : ms) {
      EXPECT_NEAR(m->value(), c.at("expected").at(key).get<double>(), 1e-12) << key;
      EXPECT_TRUE(m->higher_is_better());
    }
  }
}

TEST(TrainMetrics, ClassStateIsTheConfusionMatrixSums) {
  const json c = load_cases().at(0);  // absent_classes
  auto m = f1_score({.num_classes = c.at("num_classes").get<int64_t>()});
  for (const json& b : c.at("batches")) m->update(step_of(b), {});
  const json& pc = c.at("expected").at("per_class");
  std::vector<double> want;
  for (const char* k : {"tp", "predicted", "truth"})
    for (double v : pc.at(k).get<std::vector<double>>()) want.push_back(v);
  EXPECT_EQ(m->state(), want);
}

TEST(TrainMetrics, StateRoundTripAndFresh) {
  const json c = load_cases().at(2);  // many_classes
  auto ms = metrics_of(c);
  ms.emplace_back("loss", loss_metric());
  ms.emplace_back("lr", learning_rate());
  ms.emplace_back("samples_per_s", throughput());
  const json& batches = c.at("batches");
  auto feed = [&](Metric& m, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      StepOutput s = step_of(batches[i]);
      s.loss = scalar_tensor(0.1 * double(i + 1) + 1.0 / 3.0, kF64);
      m.update(s, {.samples = s.output.size(0), .lr = 0.01 / double(i + 1), .seconds = 0.37});
    }
  };
  for (auto& [key, m] : ms) {
    SCOPED_TRACE(key);
    feed(*m, 0, 2);
    // A checkpoint in the middle, restored into a fresh metric, continues bit for bit.
    auto resumed = m->fresh();
    EXPECT_EQ(resumed->name(), m->name());
    EXPECT_TRUE(std::isnan(resumed->value()));
    resumed->load_state(m->state());
    EXPECT_EQ(resumed->state(), m->state());
    feed(*m, 2, batches.size());
    feed(*resumed, 2, batches.size());
    EXPECT_EQ(resumed->value(), m->value());
    EXPECT_EQ(resumed->state(), m->state());
    EXPECT_FALSE(std::isnan(m->value()));
    m->reset();
    EXPECT_TRUE(std::isnan(m->value()));
    EXPECT_THROW(m->load_state(std::vector<double>(m->state().size() + 1)), ValueError);
  }
}

TEST(TrainMetrics, LossLrThroughput) {
  auto loss = loss_metric(), lr = learning_rate(), tp = throughput();
  EXPECT_EQ(loss->name(), "loss");
  EXPECT_FALSE(loss->higher_is_better());
  EXPECT_EQ(tp->name(), "samples_per_s");
  EXPECT_TRUE(tp->timing());
  EXPECT_FALSE(loss->timing());
  // Losses are weighted by batch size: (0.5 * 4 + 2.0 * 1) / 5.
  Tensor w = tensor({1.0, 1.0}).requires_grad_();
  StepOutput a{.loss = (w * 0.25).sum().reshape({})}, b{.loss = scalar_tensor(2.0)};
  for (auto& m : {loss.get(), lr.get(), tp.get()}) {
    m->update(a, {.samples = 4, .lr = 0.1, .seconds = 0.5});
    m->update(b, {.samples = 1, .lr = 0.05, .seconds = 0.5});
  }
  EXPECT_DOUBLE_EQ(loss->value(), 0.8);
  EXPECT_EQ(lr->value(), 0.05);
  EXPECT_DOUBLE_EQ(tp->value(), 5.0);
  // Without a resolved batch size, the step's own batch_size counts.
  auto l2 = loss_metric();
  l2->update({.loss = scalar_tensor(1.0), .batch_size = 3}, {});
  l2->update({.loss = scalar_tensor(3.0), .batch_size = 1}, {});
  EXPECT_DOUBLE_EQ(l2->value(), 1.5);
}

TEST(TrainMetrics, IntegerTargetDtypesAndLowPrecisionOutputs) {
  Tensor out = tensor({0.1f, 0.9f, 0.8f, 0.2f, 0.3f, 0.7f}, kF32).reshape({3, 2});
  for (DType d : {kI32, kI64, kU8}) {
    auto acc = accuracy();
    acc->update({.output = out.to(kBF16), .target = tensor({1, 0, 0}, d)}, {});
    EXPECT_DOUBLE_EQ(acc->value(), 2.0 / 3.0);
  }
  // An output that carries history (a training step's) is read without recording more.
  Tensor w = ones({1, 2}).requires_grad_();
  Tensor scored = out * w;
  auto f1 = f1_score({.num_classes = 2, .average = Average::micro});
  f1->update({.output = scored, .target = tensor({1, 0, 0})}, {});
  EXPECT_DOUBLE_EQ(f1->value(), 2.0 / 3.0);
  EXPECT_TRUE(scored.requires_grad());
}

template <class F>
void expect_error_named(F&& f, const std::string& tag) {
  try {
    f();
    ADD_FAILURE() << "no error for " << tag;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[" + tag + "]"), std::string::npos) << e.what();
  }
}

TEST(TrainMetrics, Errors) {
  Tensor out = zeros({4, 3}, {.dtype = kF64});
  Tensor tgt = tensor({0, 1, 2, 1});
  EXPECT_THROW(top_k_accuracy(0), ValueError);
  EXPECT_THROW(f1_score({.num_classes = 0}), ValueError);
  expect_error_named([&] { precision({.num_classes = -1}); }, "precision");
  EXPECT_THROW(accuracy()->update({.output = out}, {}), ShapeError);
  expect_error_named([&] { accuracy()->update({.target = tgt}, {}); }, "accuracy");
  EXPECT_THROW(accuracy()->update({.output = out.reshape({12}), .target = tgt}, {}), ShapeError);
  EXPECT_THROW(accuracy()->update({.output = out, .target = tensor({0, 1})}, {}), ShapeError);
  // Floating targets must be [N, C]; integer targets [N].
  EXPECT_THROW(accuracy()->update({.output = out, .target = tgt.to(kF32)}, {}), ShapeError);
  EXPECT_THROW(recall({.num_classes = 3})->update({.output = out, .target = zeros({4, 2})}, {}),
               ShapeError);
  expect_error_named([&] { top_k_accuracy(4)->update({.output = out, .target = tgt}, {}); },
                     "top4_accuracy");
  EXPECT_THROW(top_k_accuracy(4)->update({.output = out, .target = tgt}, {}), ValueError);
  EXPECT_THROW(f1_score({.num_classes = 4})->update({.output = out, .target = tgt}, {}),
               ShapeError);
  for (auto bad : {tensor({0, 1, 3, 1}), tensor({0, -1, 2, 1})}) {
    EXPECT_THROW(f1_score({.num_classes = 3})->update({.output = out, .target = bad}, {}),
                 IndexError);
    expect_error_named([&] { accuracy()->update({.output = out, .target = bad}, {}); },
                       "accuracy");
  }
  expect_error_named([&] { loss_metric()->update({.loss = out}, {}); }, "loss");
  EXPECT_THROW(loss_metric()->update({}, {}), ShapeError);
  EXPECT_THROW(loss_metric()->update({.loss = scalar_tensor(int64_t(1))}, {}), ShapeError);
  // An empty batch adds nothing.
  auto acc = accuracy();
  acc->update({.output = zeros({0, 3}), .target = zeros({0}, {.dtype = kI64})}, {});
  EXPECT_TRUE(std::isnan(acc->value()));
}

}  // namespace
}  // namespace ember::train

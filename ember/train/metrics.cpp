#include "ember/train/metrics.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "ember/autodiff.h"
#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/index.h"
#include "ember/ops/layout.h"
#include "ember/ops/reduce.h"

// Every metric keeps its running state in a fixed-size vector of doubles (counts and sums), so
// state()/load_state() are exact. Batches are reduced on the tensors' device with ember ops, and
// only a few numbers per step come back to the host.

namespace ember::train {

int64_t batch_size_of(const StepOutput& out) {
  if (out.batch_size >= 0) return out.batch_size;
  if (out.output.defined() && out.output.dim() > 0) return out.output.size(0);
  if (out.target.defined() && out.target.dim() > 0) return out.target.size(0);
  return 1;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] void fail_shape(const std::string& metric, const std::string& msg) {
  detail::throw_shape(metric.c_str(), msg);
}
[[noreturn]] void fail_value(const std::string& metric, const std::string& msg) {
  detail::throw_value(metric.c_str(), msg);
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  return std::string(dtype_name(t.dtype())) + " " + shape_str(t.shape());
}

// Output scores [N, C] and target class indices [N] (int64, on the output's device), checked.
struct Labels {
  Tensor output;  // [N, C]
  Tensor target;  // [N] int64
  int64_t n = 0, classes = 0;
};

Labels labels_of(const std::string& metric, const StepOutput& out) {
  const Tensor &o = out.output, &t = out.target;
  bool ok = o.defined() && t.defined() && o.dim() == 2 && o.size(1) >= 1 &&
            ((t.dim() == 1 && is_integral(t.dtype())) ||
             (t.dim() == 2 && is_floating(t.dtype()) && t.size(1) == o.size(1))) &&
            t.size(0) == o.size(0);
  if (!ok)
    fail_shape(metric, "expected output [N, C] and target [N] (integer) or [N, C] (floating), " +
                           std::string("found output ") + describe(o) + " and target " +
                           describe(t));
  Labels l;
  l.output = o.detach();
  l.n = o.size(0);
  l.classes = o.size(1);
  Tensor tgt = t.detach();
  l.target = (tgt.dim() == 2 ? argmax(tgt, 1) : tgt.to(kI64)).to(o.device());
  if (l.n > 0 && t.dim() == 1) {
    int64_t lo = amin(l.target).item<int64_t>(), hi = amax(l.target).item<int64_t>();
    if (lo < 0 || hi >= l.classes) {
      std::ostringstream os;
      os << "expected target class indices in [0, " << l.classes << "), found "
         << (lo < 0 ? lo : hi);
      detail::throw_index(metric.c_str(), os.str());
    }
  }
  return l;
}

// A metric whose state is `size` doubles, zero after reset().
class StateMetric : public Metric {
 public:
  explicit StateMetric(size_t size) : s_(size, 0.0) {}
  void reset() override { std::fill(s_.begin(), s_.end(), 0.0); }
  std::vector<double> state() const override { return s_; }
  void load_state(const std::vector<double>& s) override {
    if (s.size() != s_.size()) {
      std::ostringstream os;
      os << "expected a state of " << s_.size() << " numbers, found " << s.size();
      fail_value(name(), os.str());
    }
    s_ = s;
  }

 protected:
  std::vector<double> s_;
};

// The batch size a step stands for: the Learner's resolved one, else what the tensors say.
int64_t samples_of(const StepOutput& out, const StepContext& ctx) {
  return ctx.samples > 0 ? ctx.samples : batch_size_of(out);
}

// s_ = {sum of loss * samples, samples}.
class LossMetric final : public StateMetric {
 public:
  LossMetric() : StateMetric(2) {}
  std::string name() const override { return "loss"; }
  std::unique_ptr<Metric> fresh() const override { return std::make_unique<LossMetric>(); }
  void update(const StepOutput& out, const StepContext& ctx) override {
    const Tensor& l = out.loss;
    if (!l.defined() || l.numel() != 1 || !is_floating(l.dtype()))
      fail_shape(name(), "expected a 0-d floating loss, found " + describe(l));
    NoGradGuard no_grad;
    double n = double(samples_of(out, ctx));
    s_[0] += (ctx.loss ? *ctx.loss : l.detach().item<double>()) * n;
    s_[1] += n;
  }
  double value() const override { return s_[1] > 0 ? s_[0] / s_[1] : kNaN; }
  bool higher_is_better() const override { return false; }
};

// s_ = {correct, samples}. k == 0 is plain accuracy (argmax, cheaper than topk).
class AccuracyMetric final : public StateMetric {
 public:
  explicit AccuracyMetric(int64_t k) : StateMetric(2), k_(k) {}
  std::string name() const override {
    return k_ == 0 ? "accuracy" : "top" + std::to_string(k_) + "_accuracy";
  }
  std::unique_ptr<Metric> fresh() const override { return std::make_unique<AccuracyMetric>(k_); }
  void update(const StepOutput& out, const StepContext&) override {
    NoGradGuard no_grad;
    Labels l = labels_of(name(), out);
    if (k_ > l.classes) {
      std::ostringstream os;
      os << "expected k <= the number of classes, found k = " << k_ << " and " << l.classes
         << " classes";
      fail_value(name(), os.str());
    }
    if (l.n == 0) return;
    Tensor hits;
    if (k_ == 0) {
      hits = argmax(l.output, 1) == l.target;
    } else {
      // Each row's k indices are distinct, so at most one of them equals the target.
      hits = std::get<1>(topk(l.output, k_, 1)) == l.target.unsqueeze(1);
    }
    s_[0] += double(sum(hits).item<int64_t>());
    s_[1] += double(l.n);
  }
  double value() const override { return s_[1] > 0 ? s_[0] / s_[1] : kNaN; }
  bool higher_is_better() const override { return true; }

 private:
  int64_t k_;
};

enum class ClassKind { precision, recall, f1 };

// s_ = {true positives [C], predicted counts [C], true counts [C]}: the confusion matrix's
// diagonal, column sums and row sums, which is all precision, recall and F1 need.
class ClassMetric final : public StateMetric {
 public:
  ClassMetric(ClassKind kind, ClassMetricOptions o)
      : StateMetric(size_t(3 * o.num_classes)), kind_(kind), o_(o) {}
  std::string name() const override {
    return kind_ == ClassKind::precision ? "precision"
           : kind_ == ClassKind::recall  ? "recall"
                                         : "f1";
  }
  std::unique_ptr<Metric> fresh() const override {
    return std::make_unique<ClassMetric>(kind_, o_);
  }
  void update(const StepOutput& out, const StepContext&) override {
    NoGradGuard no_grad;
    Labels l = labels_of(name(), out);
    const int64_t c = o_.num_classes;
    if (l.classes != c) {
      std::ostringstream os;
      os << "expected output [N, " << c << "] for num_classes = " << c << ", found "
         << describe(out.output);
      fail_shape(name(), os.str());
    }
    if (l.n == 0) return;
    Tensor pred = argmax(l.output, 1);
    Tensor truth = one_hot(l.target, c);  // [N, C] int64
    Tensor hit = (pred == l.target).to(kI64).unsqueeze(1);
    Tensor counts = cat({sum(truth * hit, {0}), sum(one_hot(pred, c), {0}), sum(truth, {0})});
    std::vector<int64_t> v = counts.to_vector<int64_t>();
    for (size_t i = 0; i < v.size(); ++i) s_[i] += double(v[i]);
  }
  double value() const override;
  bool higher_is_better() const override { return true; }

 private:
  // The metric for counts (tp, predicted, true); 0 when its denominator is 0.
  double score(double tp, double predicted, double truth) const {
    double den = kind_ == ClassKind::precision ? predicted
                 : kind_ == ClassKind::recall  ? truth
                                               : predicted + truth;
    double num = kind_ == ClassKind::f1 ? 2 * tp : tp;
    return den > 0 ? num / den : 0.0;
  }
  ClassKind kind_;
  ClassMetricOptions o_;
};

double ClassMetric::value() const {
  const size_t c = size_t(o_.num_classes);
  const double *tp = s_.data(), *pred = tp + c, *truth = pred + c;
  double total = 0, tp_sum = 0, pred_sum = 0;
  for (size_t i = 0; i < c; ++i) {
    total += truth[i];
    tp_sum += tp[i];
    pred_sum += pred[i];
  }
  if (!(total > 0)) return kNaN;
  if (o_.average == Average::micro) return score(tp_sum, pred_sum, total);
  double acc = 0;
  for (size_t i = 0; i < c; ++i) {
    double w = o_.average == Average::weighted ? truth[i] : 1.0;
    acc += w * score(tp[i], pred[i], truth[i]);
  }
  return acc / (o_.average == Average::weighted ? total : double(c));
}

// s_ = {last lr, steps seen}.
class LrMetric final : public StateMetric {
 public:
  LrMetric() : StateMetric(2) {}
  std::string name() const override { return "lr"; }
  std::unique_ptr<Metric> fresh() const override { return std::make_unique<LrMetric>(); }
  void update(const StepOutput&, const StepContext& ctx) override {
    s_[0] = ctx.lr;
    s_[1] += 1;
  }
  double value() const override { return s_[1] > 0 ? s_[0] : kNaN; }
  bool higher_is_better() const override { return false; }
};

// s_ = {samples, seconds}.
class ThroughputMetric final : public StateMetric {
 public:
  ThroughputMetric() : StateMetric(2) {}
  std::string name() const override { return "samples_per_s"; }
  std::unique_ptr<Metric> fresh() const override {
    return std::make_unique<ThroughputMetric>();
  }
  void update(const StepOutput& out, const StepContext& ctx) override {
    s_[0] += double(samples_of(out, ctx));
    s_[1] += ctx.seconds;
  }
  double value() const override { return s_[1] > 0 ? s_[0] / s_[1] : kNaN; }
  bool higher_is_better() const override { return true; }
  bool timing() const override { return true; }
};

}  // namespace

MetricPtr loss_metric() { return std::make_unique<LossMetric>(); }
MetricPtr accuracy() { return std::make_unique<AccuracyMetric>(0); }
MetricPtr top_k_accuracy(int64_t k) {
  if (k < 1) fail_value("top_k_accuracy", "expected k >= 1, found " + std::to_string(k));
  return std::make_unique<AccuracyMetric>(k);
}

static MetricPtr class_metric(ClassKind kind, const char* name, const ClassMetricOptions& o) {
  if (o.num_classes < 1)
    fail_value(name, "expected num_classes >= 1, found " + std::to_string(o.num_classes));
  return std::make_unique<ClassMetric>(kind, o);
}
MetricPtr precision(const ClassMetricOptions& o) {
  return class_metric(ClassKind::precision, "precision", o);
}
MetricPtr recall(const ClassMetricOptions& o) {
  return class_metric(ClassKind::recall, "recall", o);
}
MetricPtr f1_score(const ClassMetricOptions& o) { return class_metric(ClassKind::f1, "f1", o); }

MetricPtr learning_rate() { return std::make_unique<LrMetric>(); }
MetricPtr throughput() { return std::make_unique<ThroughputMetric>(); }

}  // namespace ember::train

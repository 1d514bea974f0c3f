#pragma once
// Training metrics: running values over one epoch of one split (train or valid), fed one step
// at a time by the Learner. Each keeps its state in a few exact numbers, so a checkpoint taken
// in the middle of an epoch resumes them bit for bit.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::train {

/// What one step hands the Learner and its metrics.
struct StepOutput {
  /// The loss, a 0-d floating tensor; in training it carries history (the Learner runs backward).
  Tensor loss = {};
  /// The model's output: class scores (logits or probabilities) [N, C] for the classification
  /// metrics; may be left undefined when only the loss is tracked.
  Tensor output = {};
  /// The targets: class indices [N] (integer), or one-hot / class probabilities [N, C] (floating,
  /// reduced with argmax). May be left undefined when only the loss is tracked.
  Tensor target = {};
  /// Samples in the batch; when < 0: output.size(0), else target.size(0), else 1.
  int64_t batch_size = -1;
};

/// The samples a step stands for: batch_size when >= 0, else output.size(0), else
/// target.size(0), else 1.
int64_t batch_size_of(const StepOutput& out);

/// What a metric sees besides the batch.
struct StepContext {
  int64_t samples = 0;  // the resolved batch size
  double lr = 0;        // group 0's learning rate during this step
  double seconds = 0;   // wall time of this step
  /// The loss already read to the host by the caller (saves the loss metric a second read).
  std::optional<double> loss;
};

/// A running metric over one epoch of one split.
class Metric {
 public:
  virtual ~Metric() = default;
  /// The name used in logs and displays ("loss", "accuracy", "top5_accuracy", "f1", "lr", ...).
  virtual std::string name() const = 0;
  /// A new, reset metric of the same kind and options (the Learner keeps one per split).
  virtual std::unique_ptr<Metric> fresh() const = 0;
  virtual void reset() = 0;
  /// Adds one step. Throws ShapeError/ValueError naming the metric ("[accuracy] expected
  /// output [N, C] and target [N], found ...") when the step lacks what the metric needs.
  virtual void update(const StepOutput& out, const StepContext& ctx) = 0;
  /// The value over the steps so far; NaN before the first step.
  virtual double value() const = 0;
  /// Whether larger values are better (what early stopping assumes unless told otherwise).
  virtual bool higher_is_better() const = 0;
  /// Whether the value depends on wall time (throughput): not reproduced exactly by a resume.
  virtual bool timing() const { return false; }
  /// The exact running state (counts and sums), for checkpoints.
  virtual std::vector<double> state() const = 0;
  /// Restores state(); throws ValueError naming the metric when `s` has the wrong size.
  virtual void load_state(const std::vector<double>& s) = 0;
};

using MetricPtr = std::unique_ptr<Metric>;

/// Mean loss per sample (each step's loss weighted by its batch size). Name "loss".
MetricPtr loss_metric();
/// Fraction (0..1) of samples whose top-scoring class is the target. Name "accuracy".
MetricPtr accuracy();
/// Fraction of samples whose target is among the k top-scoring classes. Name "top<k>_accuracy".
MetricPtr top_k_accuracy(int64_t k);

/// How per-class precision/recall/F1 are combined (as in scikit-learn and torchmetrics).
enum class Average {
  macro,     // unweighted mean over classes (classes never predicted nor present count as 0)
  micro,     // from the global true/false positive counts (= accuracy for single-label data)
  weighted,  // mean over classes weighted by their number of true samples
};
struct ClassMetricOptions {
  int64_t num_classes = 0;
  Average average = Average::macro;
};
/// Precision, recall and F1 from a confusion matrix over num_classes classes. Names
/// "precision", "recall", "f1". Targets outside [0, num_classes) throw IndexError.
MetricPtr precision(const ClassMetricOptions& o);
MetricPtr recall(const ClassMetricOptions& o);
MetricPtr f1_score(const ClassMetricOptions& o);

/// The learning rate of the last step. Name "lr".
MetricPtr learning_rate();
/// Samples per second of step time over the epoch. Name "samples_per_s".
MetricPtr throughput();

}  // namespace ember::train

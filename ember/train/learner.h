#pragma once
// The Learner: fits a model with an optimizer over epochs of a training loader, validates after
// each epoch, tracks metrics, steps an LR scheduler, accumulates gradients, writes checkpoints
// and metric logs, stops early, and stops cleanly on Ctrl-C. A resumed fit continues bit for bit
// where the checkpoint left off (model, optimizer, scheduler, RNG, metrics, epoch and step).
//
//   train::Learner learner(net, opt, {.epochs = 10, .checkpoint_dir = "runs/cnn"});
//   learner.add_metric(train::accuracy());
//   auto result = learner.fit(train_loader, &valid_loader, train::classification_step(net));
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/amp.h"
#include "ember/autodiff.h"
#include "ember/nn/module.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/train/data_parallel.h"
#include "ember/train/metrics.h"
#include "ember/train/renderer.h"

namespace ember::train {

/// Stop when a monitored metric has not improved for `patience` epochs.
struct EarlyStopping {
  /// "<split>.<metric name>": "valid.loss", "valid.accuracy", "train.loss", ...
  std::string metric = "valid.loss";
  /// Direction of improvement; default: the metric's own (loss lower, accuracy higher).
  std::optional<bool> higher_is_better = {};
  /// Epochs without improvement before stopping (>= 1).
  int64_t patience = 3;
  /// The smallest change that counts as an improvement.
  double min_delta = 0;
};

enum class ScheduleEvery { epoch, step };

/// Whether the Learner replays its training step as a captured graph (ember::capture, see
/// docs/training.md, "Captured steps"): the forward pass, backward and optimizer step of a
/// batch then run as one graph launch, without ember's host work.
enum class CaptureMode {
  off,        // every step runs eagerly
  automatic,  // on devices with graphs (cuda): batches of (input, target) whose shapes repeat
  always,     // as automatic, on every device (flex and cpu replay by running the step again)
};

struct LearnerOptions {
  /// The last epoch to run (1-based; a resumed fit runs the ones left).
  int64_t epochs = 1;
  /// Micro-batches whose gradients are summed before each optimizer step (each loss is divided by
  /// it). An epoch ending mid-window steps with what it has.
  int64_t grad_accumulation = 1;
  /// Gradient clipping before each optimizer step (by total 2-norm, and/or by value).
  std::optional<double> clip_grad_norm = {};
  std::optional<double> clip_grad_value = {};
  /// Dynamic loss scaling (ember/amp.h): the loss is scaled before backward, the gradients are
  /// unscaled before clipping, and a step with an inf/nan gradient is skipped (the scale backs
  /// off). Default: a GradScaler with torch's options when the model's parameters sit on an f16
  /// mixed-precision device (Device::mixed_precision(kF16)) as the Learner is built, else none.
  /// Its scale is checkpointed.
  std::optional<amp::GradScalerOptions> grad_scaler = {};
  /// When the scheduler steps: after each epoch, or after each optimizer step.
  ScheduleEvery schedule_every = ScheduleEvery::epoch;
  /// Where checkpoints go ("" for none): one after every epoch, and one on interruption.
  std::string checkpoint_dir = {};
  /// Checkpoints kept (the newest ones); 0 keeps them all.
  int64_t keep_last = 3;
  /// Continue from the newest checkpoint in checkpoint_dir when there is one.
  bool resume = true;
  std::optional<EarlyStopping> early_stopping = {};
  /// "<split>.<metric>" (e.g. "valid.accuracy"): after each epoch that improves it, the model's
  /// state_dict is written to <checkpoint_dir>/best.safetensors (read it with store::load_into).
  std::string save_best = {};
  /// A metric log rewritten after every epoch: ".csv" or ".jsonl" ("" for none).
  std::string log_path = {};
  /// TensorBoard event files go here ("" for none; see ember/train/tensorboard.h): per training
  /// batch "batch/train/loss" (the batch's loss) and "batch/train/lr" at step = batches done in
  /// the whole fit; per epoch "train/<metric>" and "valid/<metric>" at step = epoch. Each fit adds
  /// a file; a resumed one first drops the steps it runs again from the files there.
  std::string tensorboard_dir = {};
  /// An HTML report of the run's metrics (ember/train/report.h), written atomically when fit
  /// returns ("" for none); with tensorboard_dir it has the per-batch plots too.
  std::string report_path = {};
  /// Ctrl-C (SIGINT) during fit finishes the current optimizer step, saves a checkpoint and
  /// returns with `interrupted` set; a second Ctrl-C kills the process as usual. A renderer's
  /// stop_requested() (the dashboard's `q`) stops the same way whatever this says.
  bool handle_interrupt = true;
  /// A NaN or infinite training loss throws ValueError naming the epoch and step.
  bool stop_on_nan = true;
  /// Progress display; null picks auto_renderer(dashboard): the full-screen dashboard on a
  /// terminal (ember/train/dashboard.h), plain lines when standard output is a file or a pipe.
  std::shared_ptr<Renderer> renderer = {};
  /// With `renderer` null and standard output a terminal: the dashboard (true), or the one-line
  /// live bar (false; EMBER_DASHBOARD=0 in the environment does the same).
  bool dashboard = true;
  /// Captured training steps. Under `automatic` (the default), a fit on a device with graphs
  /// whose batches are (input, target) pairs captures the step once three batches in a row had
  /// the same shapes and dtypes, and replays it for every later batch of those shapes (a last,
  /// shorter batch runs eagerly). Only steps of one micro-batch (grad_accumulation 1) without
  /// loss scaling or data_parallel are captured; a step that cannot be (a host read inside it,
  /// an optimizer without capture support) runs eagerly for the rest of the fit, with a message.
  CaptureMode capture = CaptureMode::automatic;
  /// Data-parallel training (distributed::data_parallel(ddp), docs/distributed.md): backward
  /// combines gradients across ranks at each optimizer step; each epoch's metrics are those of
  /// all ranks' samples together (their exact states summed; "lr" and throughput stay this
  /// rank's); only rank 0 writes checkpoints, best weights, logs, TensorBoard files and the
  /// report, and the other ranks show nothing unless given a renderer; the optimizer's state is
  /// taken on every rank (ZeRO-1 gathers it). Every rank resumes from the same checkpoint_dir
  /// (rank 0's), so it must be one folder all ranks can read; an end-of-epoch checkpoint
  /// resumes under any world size, a mid-epoch one only under the one that wrote it.
  std::shared_ptr<DataParallel> data_parallel = {};
};

struct FitResult {
  /// Every finished epoch, including those done before a resume.
  std::vector<EpochRecord> history;
  /// The last finished epoch (1-based; 0 when none).
  int64_t epoch = 0;
  /// Optimizer steps taken in total (across resumes).
  int64_t global_step = 0;
  bool stopped_early = false;
  bool interrupted = false;
  /// The newest checkpoint written or resumed from ("" when none).
  std::string checkpoint;
  /// Training steps of this fit that ran as replays of a captured step (LearnerOptions::capture).
  int64_t replayed_steps = 0;
};

/// A step for (input, target) batches: loss = cross_entropy(model(input), target), with the
/// output and target handed to the classification metrics. A batch elsewhere than the model's
/// parameters (a loader's host tensors, a model on a GPU) is first moved to their device.
std::function<StepOutput(std::pair<Tensor, Tensor>&)> classification_step(nn::Module& model);

class Learner {
 public:
  /// The model and optimizer (and scheduler, if any) must outlive the Learner.
  Learner(nn::Module& model, optim::Optimizer& opt, LearnerOptions options = {});
  ~Learner();
  Learner(const Learner&) = delete;
  Learner& operator=(const Learner&) = delete;

  /// Steps `sched` per options.schedule_every; its state is checkpointed.
  Learner& set_scheduler(optim::LRScheduler& sched);
  /// Tracks `m` on the training and validation passes ("loss" is always tracked). Use the split
  /// variants for metrics of one pass only (lr and throughput belong to training).
  Learner& add_metric(MetricPtr m);
  Learner& add_train_metric(MetricPtr m);
  Learner& add_valid_metric(MetricPtr m);
  const LearnerOptions& options() const;

  /// Loads a checkpoint written by a Learner into the model, optimizer, scheduler, RNG and this
  /// Learner's position; the next fit continues from there. Throws store errors for a missing,
  /// truncated or mismatched file (nothing is changed then).
  void load_checkpoint(const std::string& path);
  /// The newest checkpoint in `dir` ("" when there is none).
  static std::string latest_checkpoint(const std::string& dir);

  /// Trains over `train` (any loader with size() and epoch(e, start_batch)), validating on
  /// `*valid` (any loader with size() and epoch(e)) after each epoch when not null.
  /// `train_step(batch)` runs the forward pass and returns the loss (and what the metrics need);
  /// `valid_step` does the same under NoGradGuard in eval mode (default: train_step).
  template <class TrainLoader, class ValidLoader, class Step>
  FitResult fit(TrainLoader& train, ValidLoader* valid, Step&& train_step) {
    return fit(train, valid, train_step, train_step);
  }
  /// Without validation.
  template <class TrainLoader, class Step>
  FitResult fit(TrainLoader& train, Step&& train_step) {
    return fit(train, static_cast<TrainLoader*>(nullptr), train_step, train_step);
  }
  template <class TrainLoader, class ValidLoader, class TrainStep, class ValidStep>
  FitResult fit(TrainLoader& train, ValidLoader* valid, TrainStep&& train_step,
                ValidStep&& valid_step) {
    FitScope scope(*this, train.size(), valid ? valid->size() : -1);  // -1: no validation
    int64_t epoch = 0, start = 0;
    while (next_epoch(epoch, start)) {
      // The loader's epochs count from 0 and fix the shuffle order.
      for (auto& batch : train.epoch(uint64_t(epoch - 1), start)) {
        bool go;
        if constexpr (kPairStep<decltype(batch), TrainStep>)
          go = run_train_step(batch, [&](std::pair<Tensor, Tensor>& b) { return train_step(b); });
        else
          go = run_train_step([&] { return train_step(batch); });
        if (!go) break;
      }
      if (!end_train()) break;
      if (valid) {
        for (auto& batch : valid->epoch(0))
          if (!run_valid_step([&] { return valid_step(batch); })) break;
      }
      if (!end_epoch()) break;
    }
    return scope.finish();
  }

 private:
  struct Impl;
  // Sets up a fit (resume, signal handler, renderer) and undoes the handler however fit ends.
  class FitScope {
   public:
    /// valid_steps < 0: fit has no validation loader.
    FitScope(Learner& l, int64_t train_steps, int64_t valid_steps);
    ~FitScope();
    FitScope(const FitScope&) = delete;
    FitScope& operator=(const FitScope&) = delete;
    FitResult finish();

   private:
    Learner& l_;
    bool finished_ = false;
  };
  // Batches of (input, target) with a step that takes them: the ones LearnerOptions::capture
  // can replay.
  template <class Batch, class Step>
  static constexpr bool kPairStep =
      std::is_same_v<std::decay_t<Batch>, std::pair<Tensor, Tensor>> &&
      std::is_invocable_r_v<StepOutput, Step&, std::pair<Tensor, Tensor>&>;
  // Each returns false when the fit must stop (interrupted, early stopping, epochs done).
  bool next_epoch(int64_t& epoch, int64_t& start_batch);
  bool run_train_step(const std::function<StepOutput()>& step);
  bool run_train_step(std::pair<Tensor, Tensor>& batch,
                      const std::function<StepOutput(std::pair<Tensor, Tensor>&)>& step);
  bool end_train();
  bool run_valid_step(const std::function<StepOutput()>& step);
  bool end_epoch();

  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::train

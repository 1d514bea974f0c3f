#pragma once
// The Learner's state, shared by learner.cpp (the loop) and checkpoint.cpp (saving and resuming).
// Internal: not installed for users to include.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "ember/graph.h"
#include "ember/train/learner.h"
#include "ember/train/tensorboard.h"

namespace ember::train {

struct Learner::Impl {
  using Clock = std::chrono::steady_clock;

  Impl(nn::Module& m, optim::Optimizer& o, LearnerOptions opt)
      : model(m), optimizer(o), options(std::move(opt)) {}

  nn::Module& model;
  optim::Optimizer& optimizer;
  optim::LRScheduler* scheduler = nullptr;
  LearnerOptions options;
  std::shared_ptr<Renderer> renderer;
  std::vector<MetricPtr> train_metrics, valid_metrics;  // "loss" first in each

  // Position, saved in checkpoints.
  int64_t epochs_done = 0;  // finished epochs
  int64_t resume_step = 0;  // batches of epoch epochs_done + 1 already done (after a resume)
  int64_t global_step = 0;  // optimizer steps
  std::vector<EpochRecord> history;
  double best = 0;  // early stopping: the best monitored value so far
  bool has_best = false;
  std::optional<double> best_saved;  // save_best: the value of the weights in best.safetensors
  int64_t bad_epochs = 0;            // epochs since it last improved
  double resumed_seconds = 0;  // time already spent in the epoch a mid-epoch checkpoint resumes
  std::string checkpoint;      // newest written or loaded
  bool loaded = false;         // load_checkpoint ran: fit does not look for another

  // The running fit.
  int64_t epoch = 0;  // 1-based, the one in progress
  int64_t step = 0;   // batches done in this epoch's training pass
  int64_t valid_step = 0;
  int64_t train_steps = 0, valid_steps = 0;
  Gradients grads;  // accumulated over a window of micro-batches
  std::optional<amp::GradScaler> scaler;  // f16 mixed precision's loss scaling (checkpointed)
  Clock::time_point epoch_start, pass_start;
  double train_seconds = 0;  // of the finished training pass
  MetricValues train_values;
  bool interrupted = false, stopped_early = false;
  std::unique_ptr<TensorBoardWriter> events;  // options.tensorboard_dir's file of this fit
  /// The model's state_dict (under sharded data_parallel, gathered: call it on every rank).
  nn::StateDict model_state() const;
  /// This process writes files: no data_parallel, or its rank 0.
  bool writer() const { return !options.data_parallel || options.data_parallel->rank() == 0; }
  /// The metrics' epoch values; under data_parallel, over the samples of every rank.
  MetricValues epoch_values(const std::vector<MetricPtr>& metrics) const;

  // Captured training steps (LearnerOptions::capture), for this fit only: a step's function
  // refers to the fit's train_step.
  struct Captured {
    Shape x, y;
    DType xd = DType::F32, yd = DType::F32;
    CapturedStep step;
    bool has_output = false, has_target = false;
    int64_t batch_size = -1;
  };
  std::vector<std::unique_ptr<Captured>> captured;
  Shape last_x, last_y;  // the shapes of the last eager step's batch
  DType last_xd = DType::F32, last_yd = DType::F32;
  int64_t same_shape_steps = 0;   // eager steps in a row with those shapes
  std::optional<Device> capture_device;  // the parameters' device when the fit may capture
  int64_t replayed = 0;

  // checkpoint.cpp
  /// Writes a checkpoint of the current position into options.checkpoint_dir, prunes old ones,
  /// and returns its path ("" when there is no checkpoint_dir).
  std::string save_checkpoint(int64_t done, int64_t step_in_epoch, double seconds_in_epoch);
  void load(const std::string& path);

  // learner.cpp
  /// The value of "<split>.<metric>" in `r`; throws ValueError when `r` lacks it.
  double metric_value(const std::string& key, const EpochRecord& r) const;
  /// Whether larger values of "<split>.<metric>" are better; throws when no metric has the name.
  bool higher_is_better(const std::string& key) const;
  /// Writes best.safetensors when `rec` improves options.save_best.
  void save_best(const EpochRecord& rec);
  [[noreturn]] void fail(const std::string& msg) const;
  /// Throws ValueError naming the pass for a missing loss, or one not floating with one element.
  void check_loss(const Tensor& loss, const char* pass) const;
  /// The step's loss on the host; throws ValueError naming the pass for a missing or bad loss.
  double read_loss(const StepOutput& out, const char* pass) const;
  /// With options.stop_on_nan, throws ValueError naming the epoch and batch for a NaN or
  /// infinite training loss (`note` ends the message).
  void check_finite(double loss, const char* note) const;
  /// Group 0's learning rate (0 for an optimizer without groups).
  double current_lr() const;
  /// Progress of the running pass to the renderer (`ctx`: the step just done).
  void report(Split split, int64_t done, int64_t steps, const std::vector<MetricPtr>& metrics,
              const StepContext& ctx);
  /// Ctrl-C was pressed, or the renderer asks to stop (the dashboard's `q`).
  bool stop_requested() const;
  /// A training step's bookkeeping once its loss is read and the optimizer stepped (or not, at
  /// a window's start): metrics, events, progress, interruption. False: the fit stops.
  bool end_train_step(StepOutput& out, double loss, double lr, Clock::time_point t0,
                      bool boundary);
  /// The batch's captured step, capturing it when the shapes have repeated; null: run eagerly.
  Captured* captured_for(const std::pair<Tensor, Tensor>& batch,
                         const std::function<StepOutput(std::pair<Tensor, Tensor>&)>& step);
  /// Drops every captured step of this fit (with a message `why` when not empty); `off`: and
  /// captures nothing more in it.
  void drop_captured(const std::string& why, bool off);
};

/// "epoch-0003.safetensors" (after epoch 3) or "epoch-0004-step-0000123.safetensors" (123
/// batches into epoch 4).
std::string checkpoint_name(int64_t epochs_done, int64_t step_in_epoch);

}  // namespace ember::train

#pragma once
// Learning-rate schedulers: each step() moves every group's lr of an optimizer, with torch 1.13's
// (chainable) formulas so several schedulers can act on the same optimizer.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

/// Base of the schedulers. Construction performs the first step (epoch 0), like torch.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  /// Advances one epoch (or iteration) and writes the new lrs into the optimizer.
  virtual void step();
  /// The lrs the last step set, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  /// The scheduler's name as used in error messages ("StepLR").
  const std::string& name() const { return name_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /// Epoch counters, base lrs and last lrs (as scalars "last_epoch", "base_lr.0", ...).
  virtual State state_dict() const;
  /// Restores state_dict() of a scheduler of the same kind over the same number of groups:
  /// everything is checked first (check_state), so on error nothing changes.
  void load_state_dict(const State& s);
  /// Throws ValueError naming the scheduler unless `s` is a state it can load: every key
  /// present, lrs finite and >= 0, counters whole numbers in [-1, 2^53] (step counts >= 0), and
  /// the checks each scheduler's constructor makes of its own values. Changes nothing.
  virtual void check_state(const State& s) const;

 protected:
  LRScheduler(Optimizer& opt, std::string name);
  /// The next lrs from the current ones (torch's get_lr(); last_epoch_ already advanced).
  virtual std::vector<double> get_lr() = 0;
  /// The lrs at last_epoch_ from base_lrs_ alone, where a formula exists (used by step_to).
  virtual std::optional<std::vector<double>> closed_form_lr() { return std::nullopt; }
  /// torch's step(epoch): jumps to `epoch` using the closed form when there is one.
  void step_to(int64_t epoch);
  /// The first step, done by each subclass at the end of its constructor.
  void initial_step();
  std::vector<double> group_lrs() const;
  void apply(const std::vector<double>& lrs);
  [[noreturn]] void fail(const std::string& msg) const;
  void check_gamma(double gamma) const;
  /// Sets a state that passed check_state (no check may fail here).
  virtual void apply_state(const State& s);
  /// The scalar `key` of `s`; throws ValueError naming the scheduler when it is absent.
  double state_value(const State& s, const std::string& key) const;
  /// state_value, checked to be a whole number in [lo, 2^53].
  int64_t state_count(const State& s, const std::string& key, int64_t lo) const;

  Optimizer& opt_;
  std::string name_;
  std::vector<double> base_lrs_, last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;

  friend class SequentialLR;
  friend class ChainedScheduler;
};

/// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  int64_t step_size_;
  double gamma_;
};

/// lr *= gamma at each milestone epoch (increasing).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

/// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& opt, double gamma);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  double gamma_;
};

/// Cosine from the base lr down to eta_min over t_max epochs (and back up after, periodically).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min = 0);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  int64_t t_max_;
  double eta_min_;
};

/// SGDR: cosine annealing restarted after t_0 epochs, each period t_mult times the last.
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& opt, int64_t t_0, int64_t t_mult = 1,
                              double eta_min = 0);
  void step() override;
  State state_dict() const override;
  void check_state(const State& s) const override;

 protected:
  void apply_state(const State& s) override;
  std::vector<double> get_lr() override;
  int64_t t_0_, t_mult_, t_i_, t_cur_ = -1;
  double eta_min_;
};

/// Multiplies the base lr by a factor going linearly from start_factor to end_factor over
/// total_iters steps (a warmup when start_factor < 1).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& opt, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() override;
  double start_, end_;
  int64_t total_;
};

/// lr = base_lr * f(epoch) for a user function (torch's LambdaLR).
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& opt, std::function<double(int64_t)> f);

 protected:
  LambdaLR(Optimizer& opt, std::string name, std::function<double(int64_t)> f);
  std::vector<double> get_lr() override;
  std::function<double(int64_t)> f_;
};

/// The Transformer schedule: lr = base_lr * factor * d_model^-0.5 *
/// min(s^-0.5, s * warmup^-1.5) with s = max(epoch, 1) (linear warmup, then 1/sqrt decay).
class NoamLR : public LambdaLR {
 public:
  NoamLR(Optimizer& opt, int64_t d_model, int64_t warmup, double factor = 1.0);
};

struct OneCycleOptions {
  double max_lr = 0.1;
  int64_t total_steps = 100;
  double pct_start = 0.3;
  bool cos_anneal = true;  // false: linear
  double div_factor = 25;
  double final_div_factor = 1e4;
  bool three_phase = false;
  /// Move the momentum (beta1 for Adam-like optimizers) inversely to the lr between these.
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
};

/// The 1cycle policy: warm up from max_lr/div_factor to max_lr, then anneal far below, with the
/// momentum going the other way (sets the groups' lr and momentum at construction).
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, const OneCycleOptions& o);

 protected:
  std::vector<double> get_lr() override;
  struct Phase {
    double end_step;
    int start, end;  // 0 initial lr, 1 max lr, 2 min lr
    int m_start, m_end;  // 0 max momentum, 1 base momentum
  };
  OneCycleOptions o_;
  std::vector<Phase> phases_;
};

/// Runs schedulers one after another, switching at the milestones (each restarts at epoch 0).
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  State state_dict() const override;
  void check_state(const State& s) const override;

 protected:
  void apply_state(const State& s) override;
  std::vector<double> get_lr() override { return group_lrs(); }
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

/// Steps every scheduler each step, composing their (chainable) effects.
class ChainedScheduler : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step() override;
  State state_dict() const override;
  void check_state(const State& s) const override;

 protected:
  void apply_state(const State& s) override;
  std::vector<double> get_lr() override { return group_lrs(); }
  static Optimizer& first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& s);
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

}  // namespace ember::optim

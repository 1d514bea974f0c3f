#pragma once
// Optimizer base: parameter groups with per-group options, per-parameter state, save/load.
// Parameters are plain tensors (leaves that require grad); gradients come from a Gradients object,
// so one backward (or several accumulated with BackwardOptions::accumulate_into) feeds one step,
// or, libtorch's way, from the parameters' grad() slots: zero_grad(), backward(), step().
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ember/autodiff.h"
#include "ember/tensor.h"

namespace ember::optim {

/// Saved optimizer or scheduler state: named tensors plus named scalars under flat string keys
/// ("state.3.exp_avg", "group.0.lr"), so a safetensors store can hold it as it is.
struct State {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, double> scalars;
};

/// One parameter's optimizer state: its step count and named buffers (exp_avg, ...).
struct ParamState {
  int64_t step = 0;
  std::map<std::string, Tensor> buffers;
};

/// What every optimizer offers schedulers and users; the update rule lives in the subclasses.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Updates, in place and without recording history, every parameter that has a gradient in
  /// `grads`; parameters without one are skipped (like torch's `p.grad is None`). Then clears
  /// every parameter's grad() slot, so a loop of backward() and step(grads) never adds there
  /// nor keeps a gradient alive past the step.
  void step(const Gradients& grads);
  /// libtorch's step(): the same update from the gradients backward() accumulated in the
  /// parameters' grad() slots, which it leaves as they are (zero_grad() clears them).
  void step();
  /// Clears every parameter's grad() slot (set_to_none, libtorch's default), or fills it with
  /// zeros in place.
  void zero_grad(bool set_to_none = true);
  /// Number of parameter groups.
  virtual size_t num_groups() const = 0;
  /// The parameters of group `g`.
  virtual const std::vector<Tensor>& params(size_t g) const = 0;
  /// The learning rate of group `g` (what schedulers read and write).
  virtual double lr(size_t g) const = 0;
  virtual void set_lr(size_t g, double lr) = 0;
  /// The momentum-like coefficient of group `g` (SGD's and RMSprop's momentum, Adam's, AdamW's
  /// and Lion's beta1) that OneCycleLR cycles; none for Adagrad.
  virtual std::optional<double> momentum(size_t g) const = 0;
  /// Sets it; throws ValueError for an optimizer without one.
  virtual void set_momentum(size_t g, double m) = 0;
  /// Every parameter of every group, in group order.
  std::vector<Tensor> all_params() const;
  /// The lr the first scheduler attached to this optimizer started from (torch's initial_lr).
  std::optional<double> initial_lr(size_t g) const;
  void set_initial_lr(size_t g, double lr);
  /// The optimizer's name as used in error messages ("Adam").
  const std::string& name() const { return name_; }

  /// Every parameter's state (tensors copied) and each group's lr and momentum (what schedulers
  /// change; other options come from the code that builds the optimizer).
  /// Virtual: a wrapper (distributed::ZeroRedundancyOptimizer) gathers its shards here.
  virtual State state_dict() const;
  /// Restores a state_dict() of an optimizer with the same groups and parameter shapes. Every
  /// value is checked first, with the checks the constructor makes (an lr the optimizer would
  /// refuse, a step count that is not a whole number in [0, 2^53], ...): on error (ValueError
  /// naming the optimizer) nothing changes.
  virtual void load_state_dict(const State& s);

 protected:
  explicit Optimizer(std::string name) : name_(std::move(name)) {}
  /// The update rule over `grads` (what both step forms run).
  virtual void apply_gradients(const Gradients& grads) = 0;
  /// State of the parameters of every group, in all_params() order.
  virtual std::vector<ParamState*> param_states() = 0;
  std::vector<const ParamState*> param_states_const() const;
  /// Checks a new group's parameters: defined, floating, not already in another group.
  void check_new_params(const std::vector<Tensor>& params) const;
  [[noreturn]] void fail(const std::string& msg) const;
  /// Throws ValueError "[name] expected `what` >= 0, found v" when v < 0.
  void check_non_negative(const char* what, double v) const;
  void check_beta(const char* what, double v) const;
  /// Throws ValueError unless group `g` would accept `lr` and `momentum` (its validate()).
  virtual void check_group_values(size_t g, double lr, std::optional<double> momentum) const = 0;

 private:
  std::string name_;
  std::vector<std::optional<double>> initial_lr_;
};

/// Groups holding an `Options` struct each; subclasses supply validate() and update().
template <class Options>
class OptimizerWith : public Optimizer {
 public:
  struct Group {
    std::vector<Tensor> params;
    Options options;
    std::vector<ParamState> state;
  };

  /// Adds a group with its own options.
  void add_param_group(std::vector<Tensor> params, const Options& options) {
    validate(options);
    check_new_params(params);
    size_t n = params.size();
    groups_.push_back({std::move(params), options, std::vector<ParamState>(n)});
  }
  /// Adds a group using the optimizer's default options.
  void add_param_group(std::vector<Tensor> params) {
    add_param_group(std::move(params), defaults_);
  }
  /// The options of group `g` (writable: changes apply from the next step).
  Options& options(size_t g) { return groups_.at(g).options; }
  const Options& options(size_t g) const { return groups_.at(g).options; }
  const Options& defaults() const { return defaults_; }
  /// The state of parameter `i` of group `g`.
  const ParamState& state(size_t g, size_t i) const { return groups_.at(g).state.at(i); }

  size_t num_groups() const override { return groups_.size(); }
  const std::vector<Tensor>& params(size_t g) const override { return groups_.at(g).params; }
  double lr(size_t g) const override { return groups_.at(g).options.lr; }
  void set_lr(size_t g, double lr) override { groups_.at(g).options.lr = lr; }
  std::optional<double> momentum(size_t g) const override {
    const Options& o = groups_.at(g).options;
    if constexpr (requires { o.betas.first; }) {
      return o.betas.first;
    } else if constexpr (requires { o.momentum; }) {
      return o.momentum;
    } else {
      return std::nullopt;
    }
  }
  void set_momentum(size_t g, double m) override {
    Options& o = groups_.at(g).options;
    if constexpr (requires { o.betas.first; }) {
      o.betas.first = m;
    } else if constexpr (requires { o.momentum; }) {
      o.momentum = m;
    } else {
      fail("expected an optimizer with momentum or betas, found none");
    }
  }

 protected:
  OptimizerWith(std::string name, const Options& defaults)
      : Optimizer(std::move(name)), defaults_(defaults) {}
  /// Throws ValueError naming the optimizer for out-of-range options.
  virtual void validate(const Options& o) const = 0;
  /// One parameter's in-place update (runs under NoGradGuard).
  virtual void update(const Tensor& p, const Tensor& g, const Options& o, ParamState& s) = 0;

  void apply_gradients(const Gradients& grads) override {
    NoGradGuard no_grad;
    for (auto& grp : groups_) {
      validate(grp.options);
      for (size_t i = 0; i < grp.params.size(); ++i) {
        const Tensor& p = grp.params[i];
        if (!grads.contains(p)) continue;
        Tensor g = grads.get(p);
        if (!g.defined()) continue;
        update(p, g.detach(), grp.options, grp.state[i]);
      }
    }
  }

  void check_group_values(size_t g, double lr, std::optional<double> m) const override {
    Options o = groups_.at(g).options;
    o.lr = lr;
    if (m) {
      if constexpr (requires { o.betas.first; }) o.betas.first = *m;
      else if constexpr (requires { o.momentum; }) o.momentum = *m;
    }
    validate(o);
  }

  std::vector<ParamState*> param_states() override {
    std::vector<ParamState*> out;
    for (auto& grp : groups_)
      for (auto& s : grp.state) out.push_back(&s);
    return out;
  }

 private:
  Options defaults_;
  std::vector<Group> groups_;
};

}  // namespace ember::optim

#pragma once
// ZeroRedundancyOptimizer (ZeRO stage 1): an optim::Optimizer that wraps any ember optimizer and
// keeps the optimizer state of 1/world_size of the parameters' elements on each rank. Included by
// ember/distributed.h.
#include <functional>
#include <memory>
#include <vector>

#include "ember/distributed.h"
#include "ember/optim/optimizer.h"

namespace ember::distributed {

/// The parameters' elements, flattened in order (one flat space per dtype and device), are cut
/// into world_size equal ranges: rank r owns range r, so a big tensor may be split between
/// ranks. `make(shard)` builds this rank's optimizer (one parameter group) over 1-d copies of
/// its slices. step() refreshes the slices from the parameters, steps them with the gradients
/// given (already combined across ranks: DistributedDataParallel::backward's), and all-gathers
/// the updated ranges into every rank's parameters, so the replicas stay equal. The Learner and
/// LR schedulers drive it like any optimizer (lr and momentum are the wrapped optimizer's);
/// name() is the wrapped optimizer's, and state_dict() is consolidated (see below), so a
/// checkpoint moves between it and the plain optimizer and between world sizes.
class ZeroRedundancyOptimizer final : public optim::Optimizer {
 public:
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  ZeroRedundancyOptimizer(std::vector<Tensor> params, const Make& make,
                          ProcessGroup* group = nullptr);
  ~ZeroRedundancyOptimizer() override;

  /// One group: every parameter given (the wrapped optimizer's single group holds the slices).
  size_t num_groups() const override { return 1; }
  const std::vector<Tensor>& params(size_t g) const override;
  double lr(size_t g) const override;
  void set_lr(size_t g, double lr) override;
  std::optional<double> momentum(size_t g) const override;
  void set_momentum(size_t g, double m) override;

  /// The whole state, as the plain optimizer over all parameters would give it ("state.<i>.*"
  /// with full shapes): a collective (two small all-reduces and one all-gather per buffer name
  /// and dtype), so every rank of the group must call it; every rank gets the same result.
  optim::State state_dict() const override;
  /// Takes such a consolidated state (from any world size, or the plain optimizer's) and keeps
  /// this rank's slices of it. Local: no collective.
  void load_state_dict(const optim::State& s) override;

  /// Elements [begin, begin + size) of parameter `param` (flattened): one slice this rank owns.
  struct Slice {
    size_t param;
    int64_t begin, size;
  };
  const std::vector<Slice>& slices() const;
  /// Elements of optimizer state this rank keeps per buffer (the sum of its slices' sizes).
  int64_t local_numel() const;
  /// The wrapped optimizer over this rank's slices (its state_dict() is this rank's shard).
  optim::Optimizer& local();
  ProcessGroup& group() const;

  struct Impl;

 protected:
  void apply_gradients(const Gradients& grads) override;
  std::vector<optim::ParamState*> param_states() override { return {}; }
  void check_group_values(size_t, double, std::optional<double>) const override {}

 private:
  explicit ZeroRedundancyOptimizer(std::unique_ptr<Impl> impl);
  static std::unique_ptr<Impl> build(std::vector<Tensor> params, const Make& make,
                                     ProcessGroup* group);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::distributed

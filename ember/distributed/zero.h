#pragma once
// ZeroRedundancyOptimizer (ZeRO stage 1): each rank keeps the optimizer state of its share of
// the parameters only. Included by ember/distributed.h.
#include <functional>
#include <memory>
#include <vector>

#include "ember/autodiff.h"
#include "ember/distributed.h"
#include "ember/tensor.h"

namespace ember::optim {
class Optimizer;
}

namespace ember::distributed {

/// Parameters are dealt out whole to ranks (each to the rank with the fewest elements so far, in
/// order, the same on every rank). step() updates this rank's share with the optimizer that
/// `make` builds over it, then broadcasts every parameter from its owner, so all replicas stay
/// equal while the state (Adam's moments, momentum) lives on one rank only. Give it gradients
/// that are already combined across ranks (DistributedDataParallel::backward's).
class ZeroRedundancyOptimizer {
 public:
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  ZeroRedundancyOptimizer(std::vector<Tensor> params, const Make& make,
                          ProcessGroup* group = nullptr);
  ~ZeroRedundancyOptimizer();
  ZeroRedundancyOptimizer(const ZeroRedundancyOptimizer&) = delete;
  ZeroRedundancyOptimizer& operator=(const ZeroRedundancyOptimizer&) = delete;

  /// Updates this rank's parameters from `grads`, then broadcasts every parameter from its owner.
  void step(const Gradients& grads);
  /// The rank that owns parameter `i` (in the order given).
  int owner(size_t i) const { return owner_[i]; }
  /// The optimizer over this rank's share (null when the share is empty).
  optim::Optimizer* local() { return local_.get(); }

 private:
  std::vector<Tensor> params_;
  std::vector<int> owner_;
  std::unique_ptr<optim::Optimizer> local_;
  ProcessGroup* group_;
};

}  // namespace ember::distributed

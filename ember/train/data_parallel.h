#pragma once
// What the Learner needs from data-parallel training, as an interface: ember::distributed
// implements it (distributed::data_parallel(ddp)), so ember/train never depends on MPI or NCCL.
#include <string>
#include <utility>
#include <vector>

#include "ember/autodiff.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

namespace ember::train {

class DataParallel {
 public:
  virtual ~DataParallel() = default;
  /// This process's rank and the number of ranks; rank 0 writes the logs and checkpoints.
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// Backward of one micro-batch into `into`: gradients combined across ranks when `sync`,
  /// kept local otherwise (inside a gradient accumulation window).
  virtual void backward(const Tensor& loss, Gradients& into, bool sync) = 0;
  /// Sums `v` element by element across ranks, in place (the metrics' states).
  virtual void sum(std::vector<double>& v) = 0;
  /// Whether the model's parameters are sharded (FSDP): reading them is then a collective, so
  /// every rank takes the model's state for a checkpoint, and a resume loads it through
  /// load_model().
  virtual bool shards_parameters() const { return false; }
  /// Loads a full model state (name, tensor) into the shards (only when shards_parameters()).
  virtual void load_model(const std::vector<std::pair<std::string, Tensor>>& /*state*/) {}
  /// The optimizer state a checkpoint holds, from this rank's optimizer.state_dict(): called on
  /// every rank (FSDP gathers its shards' state here); the default keeps it as it is.
  virtual optim::State checkpoint_optimizer(const optim::State& local) { return local; }
  /// The inverse on resume: this rank's share of a checkpoint's optimizer state.
  virtual optim::State local_optimizer(const optim::State& saved) { return saved; }
};

}  // namespace ember::train

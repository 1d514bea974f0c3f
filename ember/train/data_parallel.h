#pragma once
// What the Learner needs from data-parallel training, as an interface: ember::distributed
// implements it (distributed::data_parallel(ddp)), so ember/train never depends on MPI or NCCL.
#include <vector>

#include "ember/autodiff.h"
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
};

}  // namespace ember::train

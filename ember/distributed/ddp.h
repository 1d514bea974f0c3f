#pragma once
// DistributedDataParallel: one model replica per rank, gradients averaged across ranks while the
// backward pass still runs (buckets start as soon as their gradients are final). Included by
// ember/distributed.h.
#include <memory>
#include <string>
#include <vector>

#include "ember/autodiff.h"
#include "ember/distributed.h"
#include "ember/tensor.h"
#include "ember/train/data_parallel.h"

namespace ember::nn {
class Module;
}

namespace ember::distributed {

struct DDPOptions {
  /// Gradients are reduced in buckets of about this many MiB (PyTorch's bucket_cap_mb).
  double bucket_cap_mb = 25;
  /// How gradients combine across ranks: Avg (PyTorch's DDP) or Sum.
  ReduceOp reduce = ReduceOp::Avg;
  /// Also broadcast the module's buffers (BatchNorm statistics) from rank 0 at wrap and at the
  /// start of every forward() (PyTorch's default).
  bool broadcast_buffers = true;
  /// The group the replicas form (null: the world).
  ProcessGroup* group = nullptr;
};

/// Wraps `module` (which must outlive the wrapper): its parameters and buffers are broadcast
/// from rank 0, and backward() returns gradients combined across ranks. Parameters that no rank
/// used get no gradient; one used on some ranks only gets the others' zeros (no deadlock).
class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(nn::Module& module, const DDPOptions& o = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  /// The module's forward (after broadcasting rank 0's buffers, with broadcast_buffers).
  Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }
  /// loss.backward(o), with each bucket's all-reduce started once its gradients are final and
  /// the combined gradients returned (also written into o.accumulate_into when set). Every rank
  /// must call it the same number of times.
  Gradients backward(const Tensor& loss, const BackwardOptions& o = {});

  /// While alive, backward() keeps gradients local (gradient accumulation: pass the same
  /// accumulate_into each time); the first backward() after it combines the accumulated sums.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& d);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& d_;
    bool prev_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  nn::Module& module();
  /// The group the replicas form.
  ProcessGroup& group();
  /// The buckets, each a list of parameter names in launch order.
  std::vector<std::vector<std::string>> buckets() const;
  /// Parameters that no rank gave a gradient in the last synchronised backward().
  std::vector<std::string> unused_parameters() const;
  /// How many buckets of the last synchronised backward() started before backward ended (the
  /// others started at its end).
  int buckets_started_in_backward() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

using DDP = DistributedDataParallel;

/// The Learner's view of `ddp` (which must outlive it), for LearnerOptions::data_parallel:
/// backward through ddp (no_sync inside an accumulation window), metric states summed over its
/// group, rank 0 writing the files.
std::shared_ptr<train::DataParallel> data_parallel(DistributedDataParallel& ddp);

}  // namespace ember::distributed

#pragma once
// FullyShardedDataParallel: each rank keeps a flat 1/world_size shard of every unit's parameters;
// a unit's full parameters are all-gathered when they are read (its forward, and its backward
// after they were freed) and freed when another unit is gathered. Included by
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

struct FSDPOptions {
  /// The wrapping units: submodules of the wrapped module, each sharded as one flat tensor (one
  /// dtype and device a unit). Empty: the module's direct children. Parameters in no unit form
  /// one more unit (the root), last.
  std::vector<nn::Module*> units = {};
  /// How gradients combine across ranks: Avg (PyTorch's FSDP) or Sum.
  ReduceOp reduce = ReduceOp::Avg;
  /// How many units may hold their full parameters at once (1: peak parameter memory is the
  /// shards plus one unit).
  int resident_units = 1;
  /// The group the ranks form (null: the world).
  ProcessGroup* group = nullptr;
};

/// Wraps `module` (which must outlive the wrapper): rank 0's parameters are broadcast, then
/// every parameter of a unit becomes a view of the unit's flat buffer, which is freed; reading
/// a parameter (a forward, a backward, to_vector) all-gathers its unit from the shards, so it is
/// a collective: every rank must read the same units in the same order (a forward and backward
/// of the same model does). backward() reduce-scatters each unit's gradients into its shard as
/// soon as the unit's gradients are final, and returns gradients keyed by the shards, which an
/// ordinary optimizer over parameters() steps. The full parameters are freed after backward,
/// so the next read gathers the stepped shards. Writes into the module's parameters are lost at
/// the next gather (load with load_state_dict here); one op must not read parameters of two
/// units (tied weights belong in one unit).
class FullyShardedDataParallel {
 public:
  explicit FullyShardedDataParallel(nn::Module& module, const FSDPOptions& o = {});
  /// Gathers every unit and leaves the module with ordinary full parameters (a collective).
  ~FullyShardedDataParallel();
  FullyShardedDataParallel(const FullyShardedDataParallel&) = delete;
  FullyShardedDataParallel& operator=(const FullyShardedDataParallel&) = delete;

  /// The module's forward (units are gathered as their parameters are read).
  Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }
  /// loss.backward(o) with each unit's gradients reduce-scattered into its shard (and dropped)
  /// while backward still runs; the shards' gradients (every shard gets one, zeros for unused
  /// parameters), also added into o.accumulate_into when set. Every rank must call it.
  Gradients backward(const Tensor& loss, const BackwardOptions& o = {});

  /// The shards, one flat 1-d tensor a unit: what the optimizer steps.
  std::vector<Tensor> parameters() const;
  size_t num_units() const;
  /// The parameter names of unit `u` (dotted, as in the module's state_dict).
  std::vector<std::string> unit_parameters(size_t u) const;
  /// The elements of unit `u`'s parameters (its shard holds ceil(numel / world_size)).
  int64_t unit_numel(size_t u) const;
  /// The full module state (a collective: every unit is gathered in turn); every rank gets it.
  std::vector<std::pair<std::string, Tensor>> state_dict();
  /// Loads full parameters (and buffers) into the shards and the module; local, no collective.
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd);
  /// Bytes of full unit parameters held now, and the most held at once since the last reset.
  int64_t gathered_bytes() const;
  int64_t peak_gathered_bytes() const;
  void reset_peak_gathered_bytes();
  /// Bytes of this rank's shards (about the parameters' bytes / world_size).
  int64_t shard_bytes() const;
  /// All-gathers run so far (forward and backward regathers).
  int64_t gathers() const;
  ProcessGroup& group();
  nn::Module& module();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

using FSDP = FullyShardedDataParallel;

/// The Learner's view of `fsdp` (which must outlive it), for LearnerOptions::data_parallel (give
/// the Learner an optimizer over fsdp.parameters()): backward through fsdp (every micro-batch
/// reduce-scatters: there is no no_sync), metric states summed over its group, checkpoints
/// gathered on every rank and written by rank 0, loaded into the shards; the optimizer's state
/// of each shard is saved gathered (unit u's buffers as [unit_numel(u)]), so it resumes under
/// another world size too.
std::shared_ptr<train::DataParallel> data_parallel(FullyShardedDataParallel& fsdp);

}  // namespace ember::distributed

#pragma once
// Training state on disk: optimizer and scheduler state (optim::State: named tensors and named
// scalars) in a safetensors file. Tensors are stored under their keys; scalars go into the
// header's metadata as "scalar.<key>" with the shortest decimal that reads back to the same double,
// so a saved and reloaded optimizer continues bit for bit.
#include <string>

#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/store/safetensors.h"

namespace ember::store {

/// What load_state() reads: the state and the file's other metadata entries.
struct StateFile {
  optim::State state;
  Metadata metadata;  // entries that are not scalars ("ember.kind", user entries)
};

/// Writes `s` atomically to `path`, with `metadata` beside it ("scalar." keys are reserved).
void save_state(const std::string& path, const optim::State& s, const Metadata& metadata = {});
/// Reads a file written by save_state(); a scalar that does not parse is a FormatError.
StateFile load_state(const std::string& path);

/// Saves `opt.state_dict()` (metadata "ember.kind" = "optimizer", "ember.optimizer" = its name).
void save_optimizer(const std::string& path, const optim::Optimizer& opt);
/// Loads a file written by save_optimizer into `opt`; a file of another kind or optimizer, or with
/// other groups or shapes, throws StoreError/ValueError and leaves `opt` unchanged.
void load_optimizer(const std::string& path, optim::Optimizer& opt);
/// The same for a scheduler ("ember.kind" = "scheduler").
void save_scheduler(const std::string& path, const optim::LRScheduler& sched);
void load_scheduler(const std::string& path, optim::LRScheduler& sched);

}  // namespace ember::store

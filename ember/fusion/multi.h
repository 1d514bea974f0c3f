#pragma once
// A multi-tensor group (private to ember/fusion): pointwise groups over different shapes that
// share one body — the per-parameter updates of an optimizer step (SGD with momentum, Adam,
// AdamW) — run as one kernel of the kl multi-tensor template over all their tensors, instead of
// one kernel per parameter. A member's operands are all contiguous over its own shape (no
// broadcast), so the body sees element i of every tensor alike and its shape drops out.
//
// Members keep their own scalar parameters: at run time the members whose scalars are equal
// (the usual case: one parameter group, one learning rate) share a launch, others get one each.
#include <vector>

#include "ember/fusion/executor.h"
#include "ember/fusion/pointwise.h"
#include "ember/kl/serialize.h"
#include "ember/kl/templates/multi_tensor.h"

namespace ember::fusion {

struct MultiGroup {
  std::vector<const PointwiseGroup*> members;  // built pointwise groups, in program order
  kl::MultiTensorKey key;
  Compiled code;
};

/// The multi-tensor kernel of a built pointwise group's body (its canonical hash tells which
/// groups share one), or false when an operand is not contiguous over the group's shape.
bool multi_tensor_body(const PointwiseGroup& g, const std::vector<Node>& nodes,
                       const std::vector<Value>& values, kl::MultiTensorKey& key, kl::Kernel& k,
                       const kl::Target& target);
/// Whether `g` may run at the same time as `m`'s members: it reads nothing they make or write,
/// and writes nothing they read or write.
bool multi_tensor_independent(const MultiGroup& m, const PointwiseGroup& g,
                              const std::vector<Node>& nodes);
/// Runs the compiled group (`vals`: every stored value's tensor; the stores' are allocated).
/// Returns the number of launches.
int launch_multi(const MultiGroup& m, const std::vector<Node>& nodes,
                 const std::vector<Tensor>& vals, Executor& exec, Device place);

}  // namespace ember::fusion

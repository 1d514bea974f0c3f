#pragma once
// A pointwise group (private to ember/fusion): elementwise nodes over one shape that become one
// generated kernel. Values made and used only inside the group stay in registers.
#include <vector>

#include "ember/fusion/chain.h"
#include "ember/fusion/executor.h"
#include "ember/kl/templates/pointwise.h"

namespace ember::fusion {

struct PointwiseGroup {
  Chain chain;                  // the nodes, in program order
  Shape shape;                  // every node's output shape
  Operands ops;
  std::vector<int32_t> stores;  // values the kernel writes, in output order
  std::vector<int32_t> targets; // then the in-place copies it does (the last into each tensor)
  kl::PwLayout layout;
  kl::PwKey key;
  Compiled code;
};

/// Whether a node can join a pointwise group.
bool pointwise_node(const Node& n);
/// Builds the group's operands, key and kernel IR (chain nodes, shape and stores filled in).
void build_pointwise(PointwiseGroup& g, const std::vector<Node>& nodes,
                     const std::vector<Value>& values, const kl::Target& target);
/// Runs the compiled group with `exec` on `place`: `vals` holds every stored value's tensor
/// (inputs read from it, outputs written into it).
void launch_pointwise(const PointwiseGroup& g, const std::vector<Node>& nodes,
                      const std::vector<Tensor>& vals, Executor& exec, Device place);

}  // namespace ember::fusion

#pragma once
// The autodiff engine's data (private): per-tensor metadata, graph nodes and the layer.
#include <functional>
#include <memory>
#include <vector>

#include "ember/autodiff.h"
#include "ember/backends/backend.h"
#include "ember/ops/registry.h"

namespace ember {

struct Node;

/// Hangs off TensorImpl::autograd for tensors that take part in differentiation.
struct AutogradMeta {
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  int output_nr = 0;
  Tensor grad;                    // Tensor::grad(): what backward passes accumulated
  bool retains_grad = false;      // a non-leaf whose grad backward fills (retain_grad())
};

/// A tensor a node keeps for backward: held directly, or (under gradient checkpointing) a
/// reference to the cheap node that produced it, to be recomputed on demand.
struct Saved {
  Tensor tensor;                 // what the forward pass saw (undefined when recomputed)
  uint64_t version = 0;          // storage version when saved: an in-place edit is an error
  std::shared_ptr<Node> source;  // recompute: output `source_nr` of this node
  int source_nr = 0;
};

/// Where an input's gradient goes: into another node's output, or into a leaf.
struct Edge {
  std::shared_ptr<Node> fn;
  int output_nr = 0;
  std::shared_ptr<AutogradMeta> leaf;
};

struct Node {
  OpId op{};
  Attrs attrs;
  std::vector<Saved> inputs;
  std::vector<Saved> outputs;    // outputs are saved detached (no cycle through their meta)
  std::vector<Edge> next;        // one per input
  std::vector<char> needs;       // per input: wants a gradient
  Device device;
  bool released = false;         // saved tensors freed by a backward without retain_graph
  bool recompute = false;        // checkpointing: outputs are recomputed, not kept
  TensorList recomputed;         // cache during one backward
  // Outputs whose retain_grad() was called, by output number (weak: the meta owns the node).
  std::vector<std::weak_ptr<AutogradMeta>> retained;
  // A function node (ember/autodiff/function.h): its own VJP and name instead of the op's.
  std::function<TensorList(const VjpCtx&)> function;
  const char* name = nullptr;
};

namespace autodiff {
AutogradMeta* meta_of(const Tensor& t);
std::shared_ptr<AutogradMeta> meta_ptr_of(const Tensor& t);
/// The (creating if needed) meta of t's implementation.
AutogradMeta& ensure_meta(const Tensor& t);
/// The tensor a Saved entry stands for (recomputing it under checkpointing).
Tensor unpack(const Saved& s, const char* op);
/// The autodiff layer singleton (plain, or checkpointing).
std::shared_ptr<Layer> layer(bool checkpointing);
}  // namespace autodiff

}  // namespace ember

#pragma once
// Autodiff as a device layer: `auto dev = Device::flex().autodiff();` records ops on tensors that
// require grad; `loss.backward()` returns the gradients of every leaf that requires grad.
#include <cstddef>
#include <memory>
#include <optional>
#include <unordered_map>

#include "ember/tensor.h"

namespace ember {

struct AutogradMeta;
namespace autodiff {
Gradients run_backward(const Tensor& root, const BackwardOptions& o);
}

/// Gradients of the leaves one or more backward passes reached, looked up by tensor.
class Gradients {
 public:
  /// The gradient of `t` (undefined when no gradient reached it); throws ValueError when `t`
  /// does not require grad.
  Tensor get(const Tensor& t) const;
  /// Whether a gradient for `t` is held.
  bool contains(const Tensor& t) const;
  /// Replaces (or sets) the gradient held for `t`.
  void set(const Tensor& t, Tensor grad);
  /// Drops the gradient held for `t`.
  void remove(const Tensor& t);
  size_t size() const { return grads_.size(); }
  /// Adds `g` to the gradient held for the leaf `meta` (used by backward).
  void accumulate(const std::shared_ptr<AutogradMeta>& meta, const Tensor& g);

 private:
  friend Gradients autodiff::run_backward(const Tensor& root, const BackwardOptions& o);
  struct Entry {
    std::shared_ptr<AutogradMeta> meta;  // keeps the key alive
    Tensor grad;
  };
  std::unordered_map<const AutogradMeta*, Entry> grads_;
};

struct BackwardOptions {
  /// d(loss)/d(output) for a non-scalar output (a scalar output defaults to 1).
  Tensor grad_output = {};
  /// Keep the graph's saved tensors so backward can run through it again.
  bool retain_graph = false;
  /// Record the backward pass itself, so gradients can be differentiated again (implies
  /// retain_graph).
  bool create_graph = false;
  /// Add into these gradients (accumulation across several backward calls) instead of new ones.
  Gradients* accumulate_into = nullptr;
  /// Also add each leaf's gradient into the leaf's own slot (Tensor::grad(), libtorch's
  /// accumulation, cleared by Optimizer::zero_grad or by Optimizer::step(grads)); false leaves
  /// the slots alone, as autograd::grad does.
  bool accumulate_grad = true;
};

namespace autograd {
/// torch::autograd::grad: the gradients of sum_i <outputs[i], grad_outputs[i]> with respect to
/// `inputs` (a scalar output's grad_output defaults to 1), one per input; an input the outputs do
/// not depend on is an error unless allow_unused (then undefined). Leaves' grad() slots are not
/// touched. retain_graph defaults to create_graph.
TensorList grad(const TensorList& outputs, const TensorList& inputs,
                const TensorList& grad_outputs = {}, std::optional<bool> retain_graph = {},
                bool create_graph = false, bool allow_unused = false);
}  // namespace autograd

/// While alive, no op records history on this thread (inference, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};
/// Whether ops record history on this thread (false inside a NoGradGuard).
bool grad_enabled();
/// libtorch's names for it: GradMode::is_enabled(), GradMode::set_enabled(on) (this thread).
struct GradMode {
  static bool is_enabled() { return grad_enabled(); }
  static void set_enabled(bool on);
};
/// Sets GradMode for a scope and restores it on exit (torch::AutoGradMode(false) is a
/// NoGradGuard; AutoGradMode(true) turns recording back on inside one).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled);
  ~AutoGradMode();
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

namespace detail {
/// Clears `t`'s grad() slot (set_to_none) or replaces it with zeros (Optimizer and Module
/// zero_grad).
void zero_grad_slot(const Tensor& t, bool set_to_none);
/// A Gradients object holding the grad() slots of those of `ts` that have one (libtorch-style
/// Optimizer::step() and nn::utils clipping).
Gradients slot_gradients(const std::vector<Tensor>& ts);
/// Live TensorImpl objects and live storage bytes of host backends (for memory tests).
int64_t live_tensors();
int64_t live_storage_bytes();
int64_t peak_storage_bytes();
void reset_peak_storage_bytes();
}  // namespace detail

}  // namespace ember

#pragma once
// Autodiff as a device layer: `auto dev = Device::flex().autodiff();` records ops on tensors that
// require grad; `loss.backward()` returns the gradients of every leaf that requires grad.
#include <cstddef>
#include <memory>
#include <unordered_map>

#include "ember/tensor.h"

namespace ember {

struct AutogradMeta;

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
};

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

namespace detail {
/// Live TensorImpl objects and live storage bytes of host backends (for memory tests).
int64_t live_tensors();
int64_t live_storage_bytes();
int64_t peak_storage_bytes();
void reset_peak_storage_bytes();
}  // namespace detail

}  // namespace ember

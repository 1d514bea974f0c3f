#pragma once
// A hook point of the backward pass (private): code that reduces gradients while backward still
// runs (distributed data parallel) learns when each leaf's gradient of this pass is complete.
// Thread-local: a hook sees only the backward passes run on the thread that installed it.
#include <memory>
#include <unordered_set>

#include "ember/autodiff.h"

namespace ember::autodiff {

/// Called once per leaf that backward reached, as soon as no edge into it is left to run:
/// `grads` then holds the leaf's gradient for this pass (summed with what accumulate_into held).
using LeafReadyFn = void (*)(void* ctx, const AutogradMeta* leaf, Gradients& grads);

/// While alive, backward passes on this thread call `fn(ctx, ...)` (one hook at a time; the
/// previous one is restored at destruction).
class ScopedLeafHook {
 public:
  ScopedLeafHook(LeafReadyFn fn, void* ctx);
  ~ScopedLeafHook();
  ScopedLeafHook(const ScopedLeafHook&) = delete;
  ScopedLeafHook& operator=(const ScopedLeafHook&) = delete;

 private:
  LeafReadyFn prev_fn_;
  void* prev_ctx_;
};

/// The key Gradients uses for `t` (null when t takes no part in differentiation).
const AutogradMeta* leaf_key(const Tensor& t);
/// The leaves a backward pass from `root` can reach (the root itself when it is a leaf).
std::unordered_set<const AutogradMeta*> reachable_leaves(const Tensor& root);

}  // namespace ember::autodiff

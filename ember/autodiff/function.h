#pragma once
// Function nodes (private): a caller that computes a composite forward itself (under a
// NoGradGuard, keeping what its backward needs) records one node for it, whose VJP it writes in
// ember ops. The LSTM's recurrence uses it: one node for a whole sequence, so the backward can
// take the recurrent weight's gradient as one GEMM over every step instead of one per step.
#include <functional>
#include <span>

#include "ember/ops/registry.h"

namespace ember::autodiff {

/// The VJP of a function node: ctx.inputs and ctx.outputs are the values recorded, ctx.grads the
/// outputs' cotangents (undefined = zero), ctx.needs which inputs want one; one gradient per
/// input (undefined = none). Under create_graph it runs with grad mode on and the values carry
/// their history, so a VJP that recomputes what it kept from ctx.inputs is differentiable again.
using FunctionVjp = std::function<TensorList(const VjpCtx&)>;

/// Records `outputs` (computed by the caller without history) as the outputs of one node with
/// `inputs` and `vjp`; `name` (a string literal) names it in errors. Does nothing when grad mode
/// is off or no input requires grad. Returns whether a node was recorded.
bool record_function(const char* name, std::span<const Tensor> inputs, TensorList& outputs,
                     FunctionVjp vjp);

/// Whether record_function would record a node for `inputs` (grad mode on, some input wants a
/// gradient): a caller can skip keeping what only the backward needs.
bool function_needs_grad(std::span<const Tensor> inputs);

}  // namespace ember::autodiff

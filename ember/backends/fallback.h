#pragma once
// The host fallback (private): an op that a non-host backend has no kernel for runs flex's kernel
// on host copies of its inputs, and its results are copied back to the device. Correct on every
// backend while kernels land; the per-op counts show what is left.
#include "ember/backends/backend.h"

namespace ember::detail {

/// Whether the fallback can run `call` (flex has a kernel for it and the fallback is enabled for
/// the call's backend). Throws NotImplementedError naming the op when it is disabled
/// (EMBER_CUDA_FALLBACK=error) and the op has no decomposition either; `why`, when given, says
/// why the backend's kernel could not serve the call (e.g. "cuDNN not found: ...").
bool host_fallback_applies(const OpCall& call, const char* why = nullptr);
/// Runs `call` through flex and returns device tensors (outputs that alias an input alias the
/// same device storage, and the storage is written back).
TensorList run_host_fallback(const OpCall& call);
/// A kernel that runs `call`'s decomposition (ember ops, on the call's device).
TensorList run_decomposition(const OpCall& call);
/// Gives every op that has a decomposition and no kernel in `b` the kernel run_decomposition: a
/// device backend then serves the op through the ops it is built from instead of the host
/// fallback. Called after the backend's own kernels are set; user ops keep the fallback (their
/// decomposition is their author's optional one, their host kernel is always there).
void serve_decompositions(BackendImpl& b);
/// Whether `b` runs `op` through its decomposition (a fusion layer lowers such an op itself, so
/// that its pieces queue and fuse).
bool runs_decomposition(const BackendImpl& b, OpId op);
/// Counts of fallback runs of backend `b`, per op.
int64_t fallback_count(Backend b, OpId op);
void reset_fallback_counts(Backend b);

}  // namespace ember::detail

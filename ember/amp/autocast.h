#pragma once
// The dispatcher's hook into mixed precision (private): autocast acts before shape and dtype
// inference, as torch's does, since inference refuses what it would fix (a bf16 activation
// times an f32 weight).
#include <span>

#include "ember/ops/registry.h"

namespace ember::amp::detail {

/// Called by dispatch() when `leading` (a device's outermost layer, for which leads() is true)
/// is a mixed-precision layer: casts the floating inputs of a listed op, dispatches the op again
/// into `out` and returns true; returns false when nothing needs a cast (the call goes on).
bool autocast(const Layer& leading, OpId op, const Attrs& attrs, std::span<const Tensor> inputs,
              TensorList& out);

}  // namespace ember::amp::detail

#pragma once
// Helpers for the elementwise rule tests: calling a rule directly the way the engine does.
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ember/backends/backend.h"
#include "ember/ember.h"
#include "ember/ops/registry.h"

namespace ember::test {

/// The engine's needs: defined floating inputs that are not wrapped Scalar operands.
inline bool engine_needs(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && !t.impl()->wrapped_number;
}

/// Runs `op` forward, then its rule with output cotangent `g` (ones when undefined). `needs`
/// defaults to engine_needs; `force_needs` asks for every floating input, wrapped or not.
inline TensorList call_rule(OpId op, const Attrs& a, const TensorList& in, Tensor g = {},
                            bool force_needs = false) {
  TensorList out = dispatch(op, a, std::span<const Tensor>(in));
  if (!g.defined()) g = ones_like(out[0]);
  TensorList gs{g};
  std::unique_ptr<bool[]> needs(new bool[in.size()]);
  for (size_t i = 0; i < in.size(); ++i)
    needs[i] = force_needs ? in[i].defined() && is_floating(in[i].dtype()) : engine_needs(in[i]);
  VjpCtx ctx{op, a, in, out, gs, std::span<const bool>(needs.get(), in.size())};
  return op_def(op).vjp(ctx);
}

}  // namespace ember::test

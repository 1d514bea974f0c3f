#pragma once
// Finite-difference checks of VJP rules, called directly (no tape): for an op, its attrs and f64
// inputs, the rule's input gradients for random output cotangents must match central differences
// of <cotangents, op(inputs)>. Used by the per-family rule tests and the registry-wide check.
#include <functional>
#include <string>

#include "ember/ember.h"
#include "ember/ops/registry.h"

namespace ember::test {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-4;
  int64_t max_elements = 48;  // per input: probe at most this many elements (evenly spread)
  uint64_t seed = 1234;       // random ops (dropout) are reseeded before every evaluation
};

/// "" when op's VJP rule agrees with finite differences at `inputs`, else what differs.
/// Inputs that are undefined, or not floating, get no gradient check.
std::string gradcheck(OpId op, const Attrs& attrs, const TensorList& inputs,
                      const GradcheckOptions& o = {});

/// Why gradcheck(op, attrs, inputs) would have nothing to compare (no floating input, or no
/// output with a non-empty floating cotangent), or "" when it has something. gradcheck itself
/// fails on such calls; tests that meet them on purpose skip them by name with this reason.
std::string nothing_to_check(OpId op, const Attrs& attrs, const TensorList& inputs);

/// Runs `fn` on a device whose layer records the first call of `target`; returns its attrs and
/// inputs (how the registry-wide check turns a golden case into a gradcheck).
struct CapturedCall {
  OpId op{};
  Attrs attrs;
  TensorList inputs;
  bool captured = false;
};
CapturedCall capture_op(OpId target, const std::function<void(Device)>& fn);

}  // namespace ember::test

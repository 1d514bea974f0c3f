#pragma once
// How many input tensors each op takes (private to the registry).
#include <cstddef>

#include "ember/ops/registry.h"

namespace ember::detail {

/// Throws ValueError naming `op` unless it takes `count` input tensors. The front ends pass an
/// absent optional input as an undefined tensor, so nearly every op takes a fixed count; a call
/// that reaches `dispatch` with another count (a direct `ember::dispatch`, a remote frame) is
/// refused before inference rules index into its inputs. Ops registered at run time are the
/// user's: their counts are not checked here.
void check_arity(OpId op, size_t count);

}  // namespace ember::detail

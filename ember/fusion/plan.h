#pragma once
// Planning and running a flushed queue (private to ember/fusion): groups of nodes become
// generated kernels where a template fits and the kernel is compiled; the rest run one by one
// on the backend below the layer.
#include <vector>

#include "ember/fusion/queue.h"

namespace ember::fusion {

/// Runs `nodes` in order on `place`'s backend. `values` are their outputs; a value whose
/// storage is still alive is written into it, the others live only as long as the flush needs
/// them. `*done` counts the nodes that finished (the rest did not run when this throws).
void run_plan(Device place, std::vector<Node>& nodes, const std::vector<Value>& values,
              size_t* done);

}  // namespace ember::fusion

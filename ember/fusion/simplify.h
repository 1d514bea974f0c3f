#pragma once
// Simplifying a flushed queue before it is planned (private to ember/fusion): common
// subexpressions, found on the nodes themselves, so the plan's signature (and the plan cache)
// sees the simplified queue. A node that repeats an earlier one (same op, attributes, operands
// and output geometry, and no write in place by the queue to memory it reads) gives that
// node's values: its readers read the earlier node's instead, and it is left unread (dead code
// then drops it; it still runs when something outside the queue holds what it makes).
//
// Constants need no folding here: an op whose operands are all graph constants carries no
// device layers and never reaches a queue, and a kernel takes constants as parameters.
#include <vector>

#include "ember/fusion/queue.h"

namespace ember::fusion {

/// Rewrites the inputs of `nodes` as above; returns how many nodes it left unread.
int simplify(std::vector<Node>& nodes, const std::vector<Value>& values);

}  // namespace ember::fusion

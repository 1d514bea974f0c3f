// index ops: API, inference, decompositions, registration.
#include "ember/backends/backend.h"
#include "ember/ops/common.h"

namespace ember::ops {
void register_index_ops() {}
}  // namespace ember::ops

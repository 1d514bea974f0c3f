// linalg ops: API, inference, decompositions, registration.
#include "ember/backends/backend.h"
#include "ember/ops/common.h"

namespace ember::ops {
void register_linalg_ops() {}
}  // namespace ember::ops

// nn functional ops: registration of every family file (pool, interpolate, norm, loss, attention,
// distance). Each file holds its ops' API, inference and decompositions.
#include "ember/backends/backend.h"
#include "ember/ops/common.h"

namespace ember::ops {
void register_pool_ops();
void register_interpolate_ops();
void register_norm_ops();
void register_loss_ops();
void register_attention_ops();
void register_distance_ops();

void register_nn_ops() {
  register_pool_ops();
  register_interpolate_ops();
  register_norm_ops();
  register_loss_ops();
  register_attention_ops();
  register_distance_ops();
}
}  // namespace ember::ops

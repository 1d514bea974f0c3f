// flex kernels: nn. Registers each nn kernel file (pool, interpolate, softmax, norm, nn_index).
#include "ember/backends/flex/flex.h"

namespace ember::flex {
void register_flex_pool(BackendImpl& b);
void register_flex_interpolate(BackendImpl& b);
void register_flex_softmax(BackendImpl& b);
void register_flex_norm(BackendImpl& b);
void register_flex_nn_index(BackendImpl& b);

void register_flex_nn(BackendImpl& b) {
  register_flex_pool(b);
  register_flex_interpolate(b);
  register_flex_softmax(b);
  register_flex_norm(b);
  register_flex_nn_index(b);
}
}  // namespace ember::flex

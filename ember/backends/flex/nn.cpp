// flex kernels: nn.
#include "ember/backends/flex/flex.h"

namespace ember::flex {
void register_flex_nn(BackendImpl&) {}
}  // namespace ember::flex

// flex kernels: index.
#include "ember/backends/flex/flex.h"

namespace ember::flex {
void register_flex_index(BackendImpl&) {}
}  // namespace ember::flex

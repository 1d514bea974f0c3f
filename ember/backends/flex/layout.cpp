// flex kernels: layout.
#include "ember/backends/flex/flex.h"

namespace ember::flex {
void register_flex_layout(BackendImpl&) {}
}  // namespace ember::flex

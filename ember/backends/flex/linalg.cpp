// flex kernels: linalg.
#include "ember/backends/flex/flex.h"

namespace ember::flex {
void register_flex_linalg(BackendImpl&) {}
}  // namespace ember::flex

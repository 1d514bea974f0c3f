// flex kernels: vision (ember/vision). Registers each vision kernel file.
#include "ember/backends/flex/flex.h"

namespace ember::flex {
void register_flex_nms(BackendImpl& b);
void register_flex_roi_align(BackendImpl& b);
void register_flex_morphology(BackendImpl& b);
void register_flex_components(BackendImpl& b);

void register_flex_vision(BackendImpl& b) {
  register_flex_nms(b);
  register_flex_roi_align(b);
  register_flex_morphology(b);
  register_flex_components(b);
}
}  // namespace ember::flex

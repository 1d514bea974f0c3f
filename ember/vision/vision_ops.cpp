// Registration of the vision ops (ember/vision): each file holds its ops' API and inference.
namespace ember::ops {
void register_nms_ops();
void register_roi_align_ops();
void register_morphology_ops();
void register_component_ops();

void register_vision_ops() {
  register_nms_ops();
  register_roi_align_ops();
  register_morphology_ops();
  register_component_ops();
}
}  // namespace ember::ops

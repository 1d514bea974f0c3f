// Golden runners for the vision registry ops (tests/data/vision_ops.json, written by
// tests/gen/gen_vision_ops.py): the conformance harness runs them on every backend.
#include "ember/vision/boxes.h"
#include "ember/vision/components.h"
#include "ember/vision/morphology.h"
#include "golden.h"

namespace ember::test {
namespace {

vision::NmsOptions nms_options(const json& a) {
  vision::NmsOptions o{.iou_threshold = a.at("iou_threshold").get<double>()};
  if (a.contains("score_threshold")) o.score_threshold = a["score_threshold"].get<double>();
  o.top_k = a.value("top_k", int64_t(-1));
  return o;
}

EMBER_RUNNER(nms) {
  std::vector<Tensor> in = inputs_of(c, dev);
  const vision::NmsOptions o = nms_options(c.attrs);
  if (in[2].defined()) return {vision::batched_nms(in[0], in[1], in[2], o)};
  return {vision::nms(in[0], in[1], o)};
}

EMBER_RUNNER(roi_align) {
  std::vector<Tensor> in = inputs_of(c, dev);
  const Shape out = ints(c.attrs, "output_size");
  vision::RoiAlignOptions o{.output_size = {out[0], out[1]}};
  o.spatial_scale = c.attrs.value("spatial_scale", 1.0);
  o.sampling_ratio = c.attrs.value("sampling_ratio", int64_t(-1));
  o.aligned = c.attrs.value("aligned", false);
  return {vision::roi_align(in[0], in[1], o)};
}

vision::MorphOptions morph_options(const json& a) {
  vision::MorphOptions o;
  if (a.contains("anchor")) {
    const Shape an = ints(a, "anchor");
    o.anchor = std::array<int64_t, 2>{an[0], an[1]};
  }
  o.border = a.value("border", std::string("constant"));
  if (a.contains("border_value")) o.border_value = Scalar(a["border_value"].get<double>());
  o.iterations = a.value("iterations", int64_t(1));
  return o;
}

EMBER_RUNNER(erode) {
  std::vector<Tensor> in = inputs_of(c, dev);
  return {vision::erode(in[0], in[1], morph_options(c.attrs))};
}

EMBER_RUNNER(dilate) {
  std::vector<Tensor> in = inputs_of(c, dev);
  return {vision::dilate(in[0], in[1], morph_options(c.attrs))};
}

EMBER_RUNNER(connected_components) {
  std::vector<Tensor> in = inputs_of(c, dev);
  vision::Components r =
      vision::connected_components(in[0], int(c.attrs.at("connectivity").get<int64_t>()));
  return {r.labels, r.stats, r.centroids};
}

}  // namespace
}  // namespace ember::test

// The vision functions built from ember ops against their references (tests/data/vision/
// boxes.json: torchvision.ops; functions.json: OpenCV's structuring elements and morphologyEx;
// both written by tests/gen/gen_vision_ops.py), on every golden device, plus what they refuse.
#include <gtest/gtest.h>

#include <fstream>

#include "ember/vision/boxes.h"
#include "ember/vision/morphology.h"
#include "golden.h"

namespace ember::test {
namespace {

vision::MorphShape shape_of(const std::string& s) {
  if (s == "rect") return vision::MorphShape::Rect;
  if (s == "cross") return vision::MorphShape::Cross;
  return vision::MorphShape::Ellipse;
}

vision::MorphOp op_of(const std::string& s) {
  if (s == "open") return vision::MorphOp::Open;
  if (s == "close") return vision::MorphOp::Close;
  if (s == "gradient") return vision::MorphOp::Gradient;
  if (s == "tophat") return vision::MorphOp::TopHat;
  return vision::MorphOp::BlackHat;
}

Tensor run_fn(const json& jc, Device dev) {
  const std::string fn = jc.at("op");
  const json& a = jc.value("attrs", json::object());
  std::vector<Tensor> in;
  for (const json& s : jc.at("inputs")) in.push_back(make_tensor(s, dev));
  if (fn == "box_area") return vision::box_area(in[0]);
  if (fn == "box_iou") return vision::box_iou(in[0], in[1]);
  if (fn == "generalized_box_iou") return vision::generalized_box_iou(in[0], in[1]);
  if (fn == "distance_box_iou") return vision::distance_box_iou(in[0], in[1]);
  if (fn == "complete_box_iou") return vision::complete_box_iou(in[0], in[1]);
  if (fn == "box_convert")
    return vision::box_convert(in[0], a.at("in_fmt").get<std::string>(),
                               a.at("out_fmt").get<std::string>());
  if (fn == "clip_boxes_to_image") {
    auto s = a.at("size").get<std::vector<int64_t>>();
    return vision::clip_boxes_to_image(in[0], {s[0], s[1]});
  }
  if (fn == "remove_small_boxes") return vision::remove_small_boxes(in[0], a.at("min_size"));
  if (fn == "masks_to_boxes") return vision::masks_to_boxes(in[0]);
  if (fn == "structuring_element") {
    const Shape sz = ints(a, "size");
    std::optional<std::array<int64_t, 2>> anchor;
    if (a.contains("anchor")) anchor = std::array<int64_t, 2>{a["anchor"][0], a["anchor"][1]};
    return vision::structuring_element(shape_of(a.at("shape")), {sz[0], sz[1]}, anchor);
  }
  if (fn == "morphology") {
    vision::MorphOptions o{.border = a.value("border", std::string("constant")),
                           .iterations = a.value("iterations", int64_t(1))};
    if (a.contains("border_value")) o.border_value = Scalar(a["border_value"].get<double>());
    return vision::morphology(in[0], op_of(a.at("op")), in[1], o);
  }
  if (fn == "roi_align_grad") {  // d/dx sum(roi_align(x, rois) * w), through autodiff
    const Shape os = ints(a, "output_size");
    const Device ad = dev.autodiff();
    Tensor x = in[0].to(ad).requires_grad_();
    vision::RoiAlignOptions o{.output_size = {os[0], os[1]},
                              .spatial_scale = a.at("spatial_scale"),
                              .sampling_ratio = a.at("sampling_ratio"),
                              .aligned = a.at("aligned")};
    Gradients g = (vision::roi_align(x, in[1].to(ad), o) * in[2].to(ad)).sum().backward();
    return g.get(x).to(dev);
  }
  throw std::runtime_error("no vision function " + fn);
}

int run_file(const char* file) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/vision/" + file);
  EXPECT_TRUE(f.good()) << file;
  if (!f.good()) return 0;
  const json doc = json::parse(f);
  int n = 0;
  for (const GoldenDevice& gd : golden_devices())
    for (const json& jc : doc.at("cases")) {
      SCOPED_TRACE(jc.at("name").get<std::string>() + " on " + gd.name);
      const Tensor got = run_fn(jc, gd.device);
      EXPECT_EQ(
          compare(got, jc.at("outputs").at(0), jc.value("rtol", 1e-5), jc.value("atol", 1e-6)), "");
      ++n;
    }
  return n;
}

TEST(VisionBoxes, MatchTorchvision) { EXPECT_GT(run_file("boxes.json"), 30); }

TEST(VisionMorphology, StructuringElementsAndCompoundOpsMatchOpenCV) {
  EXPECT_GT(run_file("functions.json"), 30);
}

TEST(VisionBoxes, RefuseBadInput) {
  const Tensor b = zeros({3, 4});
  EXPECT_THROW(vision::box_iou(zeros({3, 5}), b), ShapeError);
  EXPECT_THROW(vision::box_convert(b, "xyxy", "yxyx"), ValueError);
  EXPECT_THROW(vision::box_area(zeros({3, 4}, {.dtype = DType::Bool})), DTypeError);
  try {
    vision::generalized_box_iou(b, zeros({4}));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[generalized_box_iou]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[N, 4]"), std::string::npos) << e.what();
  }
}

TEST(VisionBoxes, GiouIsDifferentiable) {
  const Device d = Device::flex().autodiff();
  Tensor a = tensor(std::vector<float>{0, 0, 4, 4, 1, 1, 3, 5}, {2, 4}, DType::F32, d)
                 .requires_grad_(true);
  Tensor b = tensor(std::vector<float>{2, 2, 6, 6}, {1, 4}, DType::F32, d);
  Gradients g = vision::generalized_box_iou(a, b).sum().backward();
  const Tensor ga = g.get(a);
  EXPECT_EQ(ga.shape(), (Shape{2, 4}));
  EXPECT_TRUE(all(isfinite(ga)).item<bool>());
}

}  // namespace
}  // namespace ember::test

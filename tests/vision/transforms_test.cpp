// The fixed-parameter transforms and grid_sample against torchvision 0.14's outputs
// (tests/gen/gen_vision.py): within 1e-4 for f32 and +-1 for u8, on flex and cpu.
#include "ember/vision/transforms.h"

#include "ember/vision/sampling.h"
#include "vision/vision_test_util.h"

using namespace ember;
using namespace ember::vision;
using ember::test::load_vision_json;
using ember::test::max_abs_diff;
using ember::test::spec_tensor;
using json = nlohmann::json;

namespace {

Interpolation interp_of(const json& m) {
  return m == "nearest"   ? Interpolation::Nearest
         : m == "bicubic" ? Interpolation::Bicubic
                          : Interpolation::Bilinear;
}
Shape shape_of(const json& j) { return Shape(j.get<std::vector<int64_t>>()); }
std::pair<double, double> pair_of(const json& j) {
  return {j[0].get<double>(), j[1].get<double>()};
}

Tensor run(const std::string& op, const json& a, const Tensor& x, const json& g, Device dev) {
  if (op == "resize") {
    ResizeOptions o{.interpolation = interp_of(a["mode"]), .antialias = a["antialias"]};
    if (a.contains("max_size")) o.max_size = a["max_size"].get<int64_t>();
    return resize(x, shape_of(a["size"]), o);
  }
  if (op == "to_dtype") return to_dtype(x, a["dtype"] == "uint8" ? kU8 : kF32);
  if (op == "center_crop") return center_crop(x, shape_of(a["size"]));
  if (op == "crop") return crop(x, a["box"][0], a["box"][1], a["box"][2], a["box"][3]);
  if (op == "hflip") return hflip(x);
  if (op == "vflip") return vflip(x);
  if (op == "pad") {
    const std::string m = a["mode"];
    PadMode mode = m == "edge"        ? PadMode::Edge
                   : m == "reflect"   ? PadMode::Reflect
                   : m == "symmetric" ? PadMode::Symmetric
                                      : PadMode::Constant;
    return vision::pad(x, shape_of(a["padding"]), a["fill"], mode);
  }
  if (op == "rotate" || op == "affine") {
    AffineOptions o{.interpolation = interp_of(a["mode"])};
    if (!a.value("fill", json()).is_null()) o.fill = a["fill"].get<std::vector<double>>();
    if (!a.value("center", json()).is_null()) o.center = pair_of(a["center"]);
    if (op == "rotate") return rotate(x, a["angle"], a["expand"], o);
    return affine(x, a["angle"], pair_of(a["translate"]), a["scale"], pair_of(a["shear"]), o);
  }
  if (op == "brightness") return adjust_brightness(x, a["factor"]);
  if (op == "contrast") return adjust_contrast(x, a["factor"]);
  if (op == "saturation") return adjust_saturation(x, a["factor"]);
  if (op == "hue") return adjust_hue(x, a["factor"]);
  if (op == "grayscale") return rgb_to_grayscale(x, a["channels"]);
  if (op == "gaussian_blur") return gaussian_blur(x, shape_of(a["kernel"]), pair_of(a["sigma"]));
  if (op == "erase")
    return erase(x, a["box"][0], a["box"][1], a["box"][2], a["box"][3],
                 scalar_tensor(a["value"].get<double>(), {}, dev));
  if (op == "normalize") return normalize(x, a["mean"], a["std"]);
  if (op == "grid_sample")
    return grid_sample(x, spec_tensor(g, dev),
                       {.mode = a["mode"],
                        .padding_mode = a["padding_mode"],
                        .align_corners = a["align_corners"]});
  if (op == "affine_grid") return affine_grid(x, shape_of(a["size"]), a["align_corners"]);
  return {};
}

}  // namespace

class VisionTransforms : public ::testing::TestWithParam<const char*> {};

TEST_P(VisionTransforms, MatchTorchvision) {
  const std::string name = GetParam();
  const Device dev = name == "cpu"         ? Device::cpu()
                     : name == "cpu_eager" ? Device::cpu().eager()
                                           : Device::flex();
  auto g = load_vision_json("transforms.json");
  std::map<std::string, int> count;
  std::map<std::string, double> worst;  // per op and dtype, printed for the record
  for (auto& c : g["cases"]) {
    const std::string op = c["op"];
    if (op == "grid") continue;  // tests/vision/image_test.cpp
    Tensor x = spec_tensor(g["inputs"][c["input"].get<std::string>()], dev);
    json grid = c.contains("grid") ? g["inputs"][c["grid"].get<std::string>()] : json();
    Tensor want = spec_tensor(c["output"]);
    Tensor got = run(op, c["attrs"], x, grid, dev);
    ASSERT_TRUE(got.defined()) << op;
    EXPECT_EQ(got.dtype(), want.dtype()) << op << " " << c["attrs"].dump();
    EXPECT_EQ(got.device(), dev);
    const bool u8 = want.dtype() == kU8;
    const double diff = max_abs_diff(got, want);
    EXPECT_LE(diff, u8 ? 1.0 : 1e-4) << op << " " << c["attrs"].dump() << (u8 ? " u8" : " f32");
    ++count[op];
    double& w = worst[op + (u8 ? " u8" : " f32")];
    w = std::max(w, diff);
  }
  std::string summary = "max |ember - torchvision| on " + name + ":";
  for (auto& [k, v] : worst) summary += " " + k + " " + std::to_string(v) + ";";
  std::cout << summary << "\n";
  EXPECT_EQ(count.size(), 19u);
}

INSTANTIATE_TEST_SUITE_P(Devices, VisionTransforms, ::testing::Values("flex", "cpu", "cpu_eager"));

TEST(VisionTransformErrors, NameTheOpAndWhatWasFound) {
  auto msg = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  Tensor img = zeros({3, 8, 8});
  EXPECT_NE(msg([&] {
              resize(img, {0, 4});
            }).find("[resize] expected positive sizes"),
            std::string::npos);
  EXPECT_NE(msg([&] {
              normalize(zeros({3, 4, 4}, kU8), {0.5}, {0.5});
            }).find("[normalize] expected a floating-point"),
            std::string::npos);
  EXPECT_NE(msg([&] { normalize(img, {0.5, 0.5}, {1}); }).find("1 or 3 mean"), std::string::npos);
  EXPECT_NE(msg([&] { adjust_hue(img, 0.7); }).find("[adjust_hue]"), std::string::npos);
  EXPECT_NE(msg([&] {
              adjust_saturation(zeros({2, 4, 4}), 1.0);
            }).find("channels"),
            std::string::npos);
  EXPECT_NE(msg([&] { gaussian_blur(img, {4, 3}, {1, 1}); }).find("odd"), std::string::npos);
  EXPECT_NE(msg([&] { vision::pad(img, {8}, 0, PadMode::Reflect); }).find("smaller than the image"),
            std::string::npos);
  EXPECT_NE(msg([&] {
              grid_sample(img.unsqueeze(0), zeros({1, 2, 2, 3}));
            }).find("[grid_sample] expected grid"),
            std::string::npos);
  EXPECT_NE(msg([&] {
              rotate(img, 10, false, {.interpolation = Interpolation::Bicubic});
            }).find("nearest or bilinear"),
            std::string::npos);
}

TEST(VisionTransformShapes, BatchesAndPlainImages) {
  Tensor x = rand({2, 4, 3, 9, 11});
  EXPECT_EQ(shape_str(resize(x, {5, 6}).shape()), "[2, 4, 3, 5, 6]");
  EXPECT_EQ(shape_str(resize(x, {5}).shape()), "[2, 4, 3, 5, 6]");  // shorter side 9 -> 5
  EXPECT_EQ(shape_str(resize(rand({9, 11}), {4, 4}).shape()), "[4, 4]");
  EXPECT_EQ(shape_str(rotate(x, 30, true).shape()), "[2, 4, 3, 15, 15]");
  EXPECT_EQ(shape_str(center_crop(x, {4}).shape()), "[2, 4, 3, 4, 4]");
  EXPECT_EQ(shape_str(resize_output_size(480, 640, {224}, 256)), "[192, 256]");
  // The same batch through one call or image by image.
  Tensor a = adjust_hue(x, 0.2), b = adjust_hue(x.select(0, 1), 0.2);
  EXPECT_EQ(max_abs_diff(a.select(0, 1), b), 0);
}

TEST(VisionGridSample, GradientsReachTheInputAndGrid) {
  // Sampling at the pixel centres of a 2x2 image with align_corners: the identity.
  Tensor x = tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({1, 1, 2, 2}).requires_grad_();
  Tensor grid = tensor({-1.0f, -1.0f, 1.0f, -1.0f, -1.0f, 1.0f, 0.0f, 0.0f})
                    .reshape({1, 2, 2, 2})
                    .requires_grad_();
  Tensor y = grid_sample(x, grid, {.align_corners = true});
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 2, 3, 2.5f}));
  Gradients g = y.sum().backward();
  EXPECT_EQ(x.grad(g).to_vector<float>(), (std::vector<float>{1.25f, 1.25f, 1.25f, 0.25f}));
  // d(sum)/d(grid x) at the centre: (right - left) / 2 per unit of x in [-1, 1], summed: 1.
  EXPECT_NEAR(grid.grad(g).to_vector<float>()[6], 0.5f, 1e-6);
}

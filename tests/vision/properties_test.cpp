// Properties of the vision kernels beyond the goldens: labelling against a breadth-first search
// on random images of every small size, nms against the O(n²) definition, morphology in every
// dtype against float32, and the ops on lazy and autodiff devices.
#include <gtest/gtest.h>

#include <deque>
#include <random>

#include "ember/vision/boxes.h"
#include "ember/vision/components.h"
#include "ember/vision/morphology.h"
#include "golden.h"

namespace ember::test {
namespace {

// Labels by breadth-first search, components numbered in raster order of their first pixel.
std::vector<int32_t> bfs_labels(const std::vector<uint8_t>& img, int64_t h, int64_t w, bool eight) {
  std::vector<int32_t> lab(img.size(), 0);
  int32_t next = 0;
  for (int64_t s = 0; s < h * w; ++s) {
    if (!img[size_t(s)] || lab[size_t(s)]) continue;
    lab[size_t(s)] = ++next;
    std::deque<int64_t> q{s};
    while (!q.empty()) {
      const int64_t p = q.front();
      q.pop_front();
      const int64_t y = p / w, x = p % w;
      for (int64_t dy = -1; dy <= 1; ++dy)
        for (int64_t dx = -1; dx <= 1; ++dx) {
          if ((dy == 0 && dx == 0) || (!eight && dy != 0 && dx != 0)) continue;
          const int64_t yy = y + dy, xx = x + dx;
          if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
          const int64_t o = yy * w + xx;
          if (img[size_t(o)] && !lab[size_t(o)]) lab[size_t(o)] = next, q.push_back(o);
        }
    }
  }
  return lab;
}

TEST(VisionProperties, LabellingMatchesBreadthFirstSearch) {
  std::mt19937 rng(15);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t h = 1 + int64_t(rng() % 24), w = 1 + int64_t(rng() % 24);
    const unsigned density = 20 + rng() % 60;
    std::vector<uint8_t> img(size_t(h * w));
    for (auto& v : img) v = (rng() % 100) < density;
    const Tensor t = tensor(img, {h, w}, DType::U8);
    for (bool eight : {false, true}) {
      const vision::Components c = vision::connected_components(t, eight ? 8 : 4);
      const std::vector<int32_t> want = bfs_labels(img, h, w, eight);
      ASSERT_EQ(c.labels.to_vector<int32_t>(), want) << h << "x" << w << " eight=" << eight;
      ASSERT_EQ(c.count, *std::max_element(want.begin(), want.end()));
      // Areas sum to the image; every component's box holds all its pixels.
      EXPECT_EQ(c.stats.select(1, 4).sum().item<int64_t>(), h * w);
    }
  }
}

TEST(VisionProperties, NmsMatchesItsDefinition) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 100; ++trial) {
    const int64_t n = 1 + int64_t(rng() % 60);
    std::vector<float> b, s;
    std::vector<int64_t> cls;
    for (int64_t i = 0; i < n; ++i) {
      const float x = float(rng() % 50), y = float(rng() % 50);
      b.insert(b.end(), {x, y, x + float(1 + rng() % 20), y + float(1 + rng() % 20)});
      s.push_back(float(rng() % 8) / 8.f);  // ties
      cls.push_back(int64_t(rng() % 3));
    }
    const Tensor boxes = tensor(b, {n, 4}), scores = tensor(s, {n}), idxs = tensor(cls, {n});
    const double thr = 0.1 * double(1 + rng() % 8);
    const std::vector<double> iou =
        vision::box_iou(boxes, boxes).to(DType::F64).to_vector<double>();
    for (bool batched : {false, true}) {
      // The definition: in stable decreasing score order, keep a box unless a kept box of its
      // category overlaps it by more than the threshold.
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t p, int64_t q) { return s[size_t(p)] > s[size_t(q)]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        bool ok = true;
        for (int64_t k : kept)
          if ((!batched || cls[size_t(k)] == cls[size_t(i)]) && iou[size_t(k * n + i)] > thr)
            ok = false;
        if (ok) kept.push_back(i);
      }
      const Tensor got = batched ? vision::batched_nms(boxes, scores, idxs, {.iou_threshold = thr})
                                 : vision::nms(boxes, scores, {.iou_threshold = thr});
      ASSERT_EQ(got.to_vector<int64_t>(), kept) << "trial " << trial << " batched " << batched;
    }
  }
}

TEST(VisionProperties, MorphologyInEveryDtypeAgreesWithFloat32) {
  const Tensor base = randint(0, 100, {2, 9, 13}, {.dtype = DType::F32});
  const Tensor el = vision::structuring_element(vision::MorphShape::Ellipse, {3, 5});
  for (const char* border : {"constant", "replicate", "reflect", "reflect_101", "wrap"}) {
    const vision::MorphOptions o{.border = border};
    const Tensor e32 = vision::erode(base, el, o), d32 = vision::dilate(base, el, o);
    for (DType dt : {DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16,
                     DType::BF16, DType::F64}) {
      SCOPED_TRACE(std::string(border) + " " + std::string(dtype_name(dt)));
      EXPECT_TRUE(equal(vision::erode(base.to(dt), el, o).to(DType::F32), e32));
      EXPECT_TRUE(equal(vision::dilate(base.to(dt), el, o).to(DType::F32), d32));
    }
    // Binary morphology: bool images agree with 0/1 images.
    const Tensor bin = gt(base, Scalar(50));
    EXPECT_TRUE(
        equal(vision::erode(bin, el, o).to(DType::U8), vision::erode(bin.to(DType::U8), el, o)));
  }
  // Erosion never exceeds the image where the element holds its origin; dilation never falls
  // below it; opening and closing are idempotent.
  EXPECT_TRUE(all(le(vision::erode(base, el), base)).item<bool>());
  EXPECT_TRUE(all(ge(vision::dilate(base, el), base)).item<bool>());
  const Tensor op = vision::morphology(base, vision::MorphOp::Open, el);
  EXPECT_TRUE(equal(vision::morphology(op, vision::MorphOp::Open, el), op));
}

TEST(VisionProperties, OpsRunOnLazyAndAutodiffDevices) {
  for (Device d : {Device::cpu(), Device::cpu().autodiff(), Device::flex().autodiff()}) {
    SCOPED_TRACE(d.str());
    // Inputs produced by queued ops: the vision ops see their values.
    Tensor boxes =
        tensor(std::vector<float>{0, 0, 10, 10, 1, 1, 11, 11, 50, 50, 60, 60}, {3, 4}, {}, d) * 2.0;
    Tensor scores = tensor(std::vector<float>{0.5f, 0.9f, 0.1f}, {3}, {}, d) + 0.0;
    if (d.has_autodiff()) scores.requires_grad_();
    EXPECT_EQ(vision::nms(boxes, scores, {.iou_threshold = 0.5}).to_vector<int64_t>(),
              (std::vector<int64_t>{1, 2}));
    Tensor img =
        gt(arange(0, 16, 1, {.device = d}).reshape({4, 4}).remainder(Scalar(3)), Scalar(0));
    const vision::Components c = vision::connected_components(img, 4);
    EXPECT_EQ(c.labels.device().backend(), d.backend());
    EXPECT_GT(c.count, 0);
    EXPECT_EQ(
        vision::erode(img.to(DType::U8), ones({3, 3}, {.dtype = DType::Bool, .device = d})).shape(),
        (Shape{4, 4}));
  }
}

TEST(VisionProperties, ErrorsNameTheOp) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(nothing thrown)");
  };
  EXPECT_NE(message([] {
              vision::nms(zeros({3, 4}), zeros({4}));
            }).find("[nms] expected scores of shape [3]"),
            std::string::npos);
  EXPECT_NE(message([] {
              vision::roi_align(zeros({1, 1, 4, 4}), zeros({2, 4}));
            }).find("[roi_align]"),
            std::string::npos);
  EXPECT_NE(message([] {
              vision::erode(zeros({4}), ones({3, 3}));
            }).find("[erode] expected an image"),
            std::string::npos);
  EXPECT_NE(message([] {
              vision::connected_components(zeros({2, 2}), 6);
            }).find("[connected_components] connectivity"),
            std::string::npos);
  EXPECT_NE(message([] {
              vision::dilate(zeros({4, 4}), ones({3, 3}), {.border = "circular"});
            }).find("unknown border"),
            std::string::npos);
}

}  // namespace
}  // namespace ember::test

// 2048x2048 images against OpenCV's summaries (tests/data/vision/large.json, written by
// tests/gen/gen_vision_ops.py): both sides build each image from the same formula (square
// spirals, checkerboards, hashed noise), and the file keeps only what the references computed
// from them (component counts, CRC-32 of label images and statistics, CRC-32 of morphology
// outputs). Prints each op's time, for docs/vision_ops.md: the fastest of EMBER_VISION_REPS runs
// (default 1).
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "ember/vision/boxes.h"
#include "ember/vision/components.h"
#include "ember/vision/morphology.h"
#include "golden.h"

namespace ember::test {
namespace {

using Image = std::vector<uint8_t>;

Image spiral(int64_t n, int64_t step) {
  Image img(size_t(n * n), 0);
  int64_t x = n / 2, y = n / 2, d = 0, length = 1;
  const int64_t dirs[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
  while (length * step <= 2 * n + 4) {
    for (int rep = 0; rep < 2; ++rep, ++d)
      for (int64_t s = 0; s < length * step; ++s) {
        if (x >= 0 && x < n && y >= 0 && y < n) img[size_t(y * n + x)] = 1;
        x += dirs[d % 4][0], y += dirs[d % 4][1];
      }
    ++length;
  }
  return img;
}

uint64_t hash_u32(uint64_t i, uint64_t seed) {
  uint64_t v = (i * 2654435761ull + seed * 40503ull) & 0xffffffffull;
  v ^= v >> 15;
  v = (v * 2246822519ull) & 0xffffffffull;
  return v ^ (v >> 13);
}

Image hashed(int64_t n, uint64_t seed, uint64_t num, uint64_t den) {
  Image img(size_t(n * n));
  for (int64_t i = 0; i < n * n; ++i) img[size_t(i)] = hash_u32(uint64_t(i), seed) % den < num;
  return img;
}

Image checker(int64_t n, int64_t block) {
  Image img(size_t(n * n));
  for (int64_t y = 0; y < n; ++y)
    for (int64_t x = 0; x < n; ++x) img[size_t(y * n + x)] = ((y / block + x / block) % 2) == 0;
  return img;
}

Image make_image(const std::string& name, int64_t n) {
  if (name == "spiral") return spiral(n, 2);
  if (name == "spiral4") return spiral(n, 4);
  if (name == "checker1") return checker(n, 1);
  if (name == "checker3") return checker(n, 3);
  if (name == "noise50") return hashed(n, 1, 1, 2);
  if (name == "noise40") return hashed(n, 2, 2, 5);
  if (name == "spiral_noise") {
    Image a = spiral(n, 2), b = hashed(n, 3, 1, 64);
    for (size_t i = 0; i < a.size(); ++i) a[i] ^= b[i];
    return a;
  }
  Image g(size_t(n * n));  // "gray"
  for (int64_t i = 0; i < n * n; ++i) g[size_t(i)] = uint8_t(hash_u32(uint64_t(i), 4) & 255);
  return g;
}

// tests/gen/vision_images.py's hashed_boxes: boxes [n, 4], scores [n], classes [n].
std::array<Tensor, 3> hashed_boxes(int64_t n, uint64_t seed) {
  std::vector<float> b(static_cast<size_t>(4 * n)), s(static_cast<size_t>(n));
  std::vector<int64_t> c(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    auto col = [&](uint64_t k) { return hash_u32(uint64_t(i), seed + k); };
    const float x1 = float(col(0) % 1000), y1 = float(col(1) % 1000);
    const float w = float(8 + col(2) % 120), h = float(8 + col(3) % 120);
    b[size_t(4 * i)] = x1, b[size_t(4 * i + 1)] = y1, b[size_t(4 * i + 2)] = x1 + w,
                 b[size_t(4 * i + 3)] = y1 + h;
    s[size_t(i)] = float(col(4) % 4096) / 4096.f;
    c[size_t(i)] = int64_t(col(5) % 10);
  }
  return {tensor(b, {n, 4}), tensor(s, {n}), tensor(c, {n})};
}

// tests/gen/vision_images.py's hashed_features: values k / 1024 for k in [0, 1024).
Tensor hashed_features(const Shape& shape, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(hash_u32(uint64_t(i), seed) % 1024) / 1024.f;
  return tensor(v, shape);
}

uint32_t crc_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  return uint32_t(crc32(0, static_cast<const Bytef*>(c.raw_data()), uInt(c.nbytes())));
}

vision::MorphShape shape_of(const std::string& s) {
  if (s == "rect") return vision::MorphShape::Rect;
  if (s == "cross") return vision::MorphShape::Cross;
  return vision::MorphShape::Ellipse;
}

TEST(VisionLarge, ImagesOf2048SquaredMatchOpenCV) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/vision/large.json");
  ASSERT_TRUE(f.good());
  const json doc = json::parse(f);
  const int64_t n = doc.at("size");
  const char* reps_env = std::getenv("EMBER_VISION_REPS");
  const int reps = reps_env ? std::max(1, std::atoi(reps_env)) : 1;
  std::map<std::string, Tensor> images;
  for (const json& c : doc.at("cases")) {
    const std::string kind = c.at("kind");
    if (kind == "nms" || kind == "batched_nms" || kind == "roi_align") continue;  // tests below
    const std::string name = c.at("image");
    if (!images.count(name))
      images[name] = tensor(make_image(name, n), {n, n}, DType::U8, Device::flex());
    const Tensor& img = images[name];
    SCOPED_TRACE(kind + " of " + name);
    std::string what;
    double ms = 1e30;
    auto timed = [&](auto fn) {
      for (int rep = 0; rep < reps; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        fn();
        ms = std::min(
            ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count());
      }
    };
    if (kind == "components") {
      const int conn = c.at("connectivity");
      vision::Components r;
      timed([&] { r = vision::connected_components(img, conn); });
      what = "connected_components " + std::to_string(conn);
      EXPECT_EQ(r.count, c.at("count").get<int64_t>());
      EXPECT_EQ(crc_of(r.labels), c.at("labels_crc32").get<uint32_t>());
      EXPECT_EQ(crc_of(r.stats), c.at("stats_crc32").get<uint32_t>());
      double sum = 0;
      for (double v : r.centroids.to_vector<double>()) sum += std::isnan(v) ? 0 : v;
      EXPECT_NEAR(sum, c.at("centroid_sum").get<double>(), 1e-9 * std::fabs(sum) + 1e-9);
    } else {
      const Shape sz = ints(c, "size");
      const Tensor se = vision::structuring_element(shape_of(c.at("shape")), {sz[0], sz[1]});
      vision::MorphOptions o{.border = c.at("border")};
      Tensor out;
      timed(
          [&] { out = kind == "erode" ? vision::erode(img, se, o) : vision::dilate(img, se, o); });
      what = kind + " " + c.at("shape").get<std::string>() + " " + std::to_string(sz[0]) + "x" +
             std::to_string(sz[1]) + " " + o.border;
      EXPECT_EQ(crc_of(out), c.at("crc32").get<uint32_t>());
    }
    std::cout << "[ vision ] " << what << " on " << name << " " << n << "x" << n << ": " << ms
              << " ms\n";
  }
}

TEST(VisionLarge, NmsOf20000HashedBoxesMatchesTorchvision) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/vision/large.json");
  ASSERT_TRUE(f.good());
  const json doc = json::parse(f);
  for (const json& c : doc.at("cases")) {
    const std::string kind = c.at("kind");
    if (kind != "nms" && kind != "batched_nms") continue;
    const auto [boxes, scores, classes] = hashed_boxes(c.at("boxes"), c.at("seed"));
    const vision::NmsOptions o{.iou_threshold = c.at("iou_threshold")};
    const auto t0 = std::chrono::steady_clock::now();
    Tensor keep = kind == "nms" ? vision::nms(boxes, scores, o)
                                : vision::batched_nms(boxes, scores, classes, o);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(keep.numel(), c.at("count").get<int64_t>()) << kind;
    if (kind == "nms")
      EXPECT_EQ(crc_of(keep), c.at("keep_crc32").get<uint32_t>());
    else
      EXPECT_EQ(crc_of(std::get<0>(sort(keep))), c.at("sorted_keep_crc32").get<uint32_t>());
    std::cout << "[ vision ] " << kind << " of " << boxes.size(0) << " boxes: " << ms << " ms\n";
  }
}

TEST(VisionLarge, RoiAlignOf512RoisMatchesTorchvision) {
  std::ifstream f(std::string(EMBER_TEST_DATA) + "/vision/large.json");
  ASSERT_TRUE(f.good());
  const json doc = json::parse(f);
  for (const json& c : doc.at("cases")) {
    if (c.at("kind") != "roi_align") continue;
    const Tensor x = hashed_features(ints(c, "features"), c.at("seed"));
    const int64_t k = c.at("rois");
    const Tensor boxes = std::get<0>(hashed_boxes(k, c.at("roi_seed")));
    const Tensor batch = remainder(arange(k, {.dtype = DType::F32}), Scalar(2)).unsqueeze(1);
    const Tensor rois = cat({batch, boxes}, 1);
    const Shape os = ints(c, "output_size");
    const vision::RoiAlignOptions o{.output_size = {os[0], os[1]},
                                    .spatial_scale = c.at("spatial_scale"),
                                    .sampling_ratio = c.at("sampling_ratio"),
                                    .aligned = c.at("aligned")};
    double ms = 1e30;
    Tensor y;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      y = vision::roi_align(x, rois, o);
      ms = std::min(
          ms,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    const Tensor yd = y.to(DType::F64);
    const double s = yd.sum().item<double>();
    const double d = abs(yd.slice(2, 1, std::nullopt) - yd.slice(2, 0, -1)).sum().item<double>();
    EXPECT_NEAR(s, c.at("sum").get<double>(), 1e-6 * std::fabs(s));
    EXPECT_NEAR(d, c.at("abs_diff_sum").get<double>(), 1e-5 * std::fabs(d));
    const std::vector<double> first = c.at("first");
    const std::vector<double> got = yd.reshape({-1}).slice(0, 0, 8).to_vector<double>();
    for (size_t i = 0; i < first.size(); ++i) EXPECT_NEAR(got[i], first[i], 1e-6);
    std::cout << "[ vision ] roi_align of " << k << " rois on " << shape_str(x.shape()) << ": "
              << ms << " ms\n";
  }
}

}  // namespace
}  // namespace ember::test

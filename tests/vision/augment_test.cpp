// Random transforms: seeded, composable, their draws within torchvision's ranges, MixUp and
// CutMix by their formulas, and the same augmented batches from a DataLoader with any workers.
#include "ember/vision/augment.h"

#include "ember/data/loader.h"
#include "vision/vision_test_util.h"

using namespace ember;
using namespace ember::vision;
using ember::test::max_abs_diff;

TEST(VisionAugment, RngIsSeededAndItsDistributionsAreRight) {
  Rng a(5), b(5), c(6);
  EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(a.next(), c.next());
  Rng r(1);
  double su = 0, sn = 0, sn2 = 0, sb = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    su += r.uniform(2, 4);
    const double z = r.normal();
    sn += z, sn2 += z * z;
    sb += r.beta(2.0, 6.0);
    const int64_t k = r.randint(-3, 4);
    ASSERT_TRUE(k >= -3 && k < 4);
  }
  EXPECT_NEAR(su / n, 3.0, 0.02);
  EXPECT_NEAR(sn / n, 0.0, 0.03);
  EXPECT_NEAR(sn2 / n, 1.0, 0.04);
  EXPECT_NEAR(sb / n, 0.25, 0.01);  // a / (a + b)
  EXPECT_NE(Rng(1, 2, 0).next(), Rng(1, 2, 1).next());
  EXPECT_NE(Rng(1, 2, 0).next(), Rng(1, 3, 0).next());
}

TEST(VisionAugment, ComposeIsDeterministicPerSeed) {
  Compose t{{RandomResizedCrop{.size = {8, 8}}, RandomHorizontalFlip{}, ToDtype{kF32},
             ColorJitter{.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1},
             RandomErasing{.p = 1.0}, Normalize{{0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}}}};
  Tensor img = randint(0, 256, {3, 20, 30}, TensorOptions{.dtype = kU8});
  Transform tt = t;
  Tensor a = tt(img, 11), b = tt(img, 11), c = tt(img, 12);
  EXPECT_EQ(shape_str(a.shape()), "[3, 8, 8]");
  EXPECT_EQ(a.dtype(), kF32);
  EXPECT_EQ(max_abs_diff(a, b), 0);
  EXPECT_GT(max_abs_diff(a, c), 0);
  // A plain function is a transform too; a batch gets one draw for all its images.
  Transform twice = [](const Tensor& x) { return x * 2.0; };
  EXPECT_EQ(max_abs_diff(twice(ones({2, 2})), full({2, 2}, 2.0)), 0);
  Tensor batch = stack({img, img});
  Tensor flipped = RandomHorizontalFlip{.p = 1.0}(batch, *std::make_unique<Rng>(0));
  EXPECT_EQ(max_abs_diff(flipped.select(0, 1), img.flip({-1})), 0);
}

TEST(VisionAugment, RandomResizedCropDrawsLikeTorchvision) {
  RandomResizedCrop t{.size = {4}};
  Rng rng(3);
  double area = 0;
  for (int i = 0; i < 2000; ++i) {
    auto [top, left, h, w] = t.params(100, 200, rng);
    ASSERT_TRUE(top >= 0 && left >= 0 && h > 0 && w > 0 && top + h <= 100 && left + w <= 200);
    const double ratio = double(w) / double(h);
    ASSERT_TRUE(ratio > 0.7 && ratio < 1.4) << ratio;
    area += double(h * w) / 20000.0;
  }
  // torchvision: 0.3045 over 20000 draws of RandomResizedCrop.get_params for 100 x 200.
  EXPECT_NEAR(area / 2000, 0.3045, 0.015);
  // An extreme image falls back to a central crop of the nearest allowed aspect.
  RandomResizedCrop narrow{.size = {4}, .scale = {0.99, 1.0}};
  auto p = narrow.params(10, 1000, rng);
  EXPECT_EQ(p[2], 10);
  EXPECT_EQ(p[3], 13);
}

TEST(VisionAugment, RandomTransformsStayInRange) {
  Tensor img = rand({3, 16, 16});
  Rng rng(9);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(shape_str(RandomCrop{.size = {20}, .pad_if_needed = true}(img, rng).shape()),
              "[3, 20, 20]");
    EXPECT_EQ(shape_str(RandomCrop{.size = {8, 5}, .padding = {2}}(img, rng).shape()), "[3, 8, 5]");
    EXPECT_EQ(shape_str(RandomRotation{.degrees = {-30, 30}}(img, rng).shape()), "[3, 16, 16]");
    Tensor af = RandomAffine{.degrees = {-10, 10},
                             .translate = std::pair{0.1, 0.1},
                             .scale = std::pair{0.9, 1.1},
                             .shear = std::array<double, 4>{-5, 5, -5, 5}}(img, rng);
    EXPECT_EQ(shape_str(af.shape()), "[3, 16, 16]");
    EXPECT_EQ(RandomGrayscale{.p = 1.0}(img, rng).size(0), 3);
    Tensor blur = GaussianBlur{.kernel_size = {5}}(img, rng);
    EXPECT_LE(blur.max().item<double>(), 1.0 + 1e-6);
    Tensor er = RandomErasing{.p = 1.0, .value = 7}(img, rng);
    EXPECT_GT((er == 7.0).sum().item<int64_t>(), 0);
  }
}

TEST(VisionAugment, MixUpAndCutMixFollowTheirFormulas) {
  Tensor x = rand({4, 3, 6, 8});
  Tensor y = tensor({0, 2, 1, 2});
  auto [mx, my] = MixUp{.num_classes = 3}.apply(x, y, 0.3);
  EXPECT_LE(max_abs_diff(mx.select(0, 1), x.select(0, 1) * 0.3 + x.select(0, 0) * 0.7), 1e-6);
  EXPECT_EQ(shape_str(my.shape()), "[4, 3]");
  EXPECT_NEAR(my.select(0, 1).to_vector<float>()[2], 0.3f, 1e-6);
  EXPECT_NEAR(my.select(0, 1).to_vector<float>()[0], 0.7f, 1e-6);
  auto [cx, cy] = CutMix{.num_classes = 3}.apply(x, y, {1, 2, 4, 6});  // 3 x 4 of 6 x 8
  EXPECT_EQ(max_abs_diff(cx.select(0, 2).narrow(1, 1, 3).narrow(2, 2, 4),
                         x.select(0, 1).narrow(1, 1, 3).narrow(2, 2, 4)),
            0);
  EXPECT_EQ(max_abs_diff(cx.select(0, 2).narrow(1, 0, 1), x.select(0, 2).narrow(1, 0, 1)), 0);
  EXPECT_NEAR(cy.select(0, 2).to_vector<float>()[1], 0.75f, 1e-6);  // lam = 1 - 12/48
  Rng rng(4);
  auto [rx, ry] = CutMix{.num_classes = 3}(x, y, rng);
  EXPECT_NEAR(ry.sum().item<double>(), 4.0, 1e-5);
  auto [ux, uy] = MixUp{.num_classes = 3, .alpha = 0.2}(x, y, rng);
  EXPECT_NEAR(uy.sum().item<double>(), 4.0, 1e-5);
}

TEST(VisionAugment, DataLoaderBatchesDoNotDependOnWorkers) {
  std::vector<data::Example> items;
  for (int i = 0; i < 12; ++i)
    items.push_back({full({3, 12, 12}, double(i) / 12.0), scalar_tensor(int64_t(i % 3), kI64)});
  Compose t{{RandomResizedCrop{.size = {6}}, RandomHorizontalFlip{}}};
  auto run = [&](int workers) {
    auto ds = augment(data::in_memory(items), t, /*seed=*/42);
    data::DataLoader<data::Example> loader(
        ds, {.batch_size = 4, .shuffle = true, .seed = 1, .workers = workers});
    std::vector<Tensor> out;
    for (int epoch = 0; epoch < 2; ++epoch)
      for (auto& [x, y] : loader) out.push_back(x);
    return out;
  };
  auto a = run(0), b = run(2);
  ASSERT_EQ(a.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(max_abs_diff(a[i], b[i]), 0) << i;
  EXPECT_EQ(shape_str(a[0].shape()), "[4, 3, 6, 6]");
}

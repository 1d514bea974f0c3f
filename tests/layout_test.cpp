// Layout ops beyond the golden cases: zero-copy semantics of split/chunk/unbind/meshgrid, inputs
// big enough to take the parallel paths (checked against plain loops), rank limits.
#include <gtest/gtest.h>

#include <vector>

#include "ember/ops/modes.h"
#include "ember/ember.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

TEST(LayoutViews, SplitChunkUnbindShareStorage) {
  Tensor x = zeros({4, 3});
  TensorList parts = split(x, 2, 0);
  ASSERT_EQ(parts.size(), 2u);
  parts[1].fill_(7);  // writes through the view
  EXPECT_EQ(x.sum().item<float>(), 42.f);
  TensorList cols = chunk(x, 3, 1);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_TRUE(cols[2].is_alias_of(x));
  EXPECT_EQ(cols[2].strides(), Shape({3, 1}));
  TensorList rows = unbind(x, 0);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_TRUE(rows[3].is_alias_of(x));
  EXPECT_EQ(rows[3].to_vector<float>(), (std::vector<float>{7, 7, 7}));
}

TEST(LayoutViews, MeshgridGridsAreBroadcastViews) {
  Tensor a = arange(3, {kF32}), b = arange(2, {kF32});
  TensorList g = meshgrid({a, b}, "xy");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].shape(), Shape({2, 3}));
  EXPECT_TRUE(g[0].is_alias_of(a));
  EXPECT_EQ(g[0].strides(), Shape({0, 1}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{0, 0, 0, 1, 1, 1}));
}

TEST(LayoutViews, ViewOfZeroDimIsZeroCopy) {
  Tensor s = scalar_tensor(3.f);
  Tensor v = view(s, {1, 1});
  EXPECT_TRUE(v.is_alias_of(s));
  EXPECT_EQ(v.shape(), Shape({1, 1}));
}

// --- large inputs against plain loops ---
TEST(LayoutLarge, CatOfManyPiecesAndOfBigOnes) {
  TensorList pieces;
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 300; ++i) {
    pieces.push_back(full({1, 500}, i, {kI64}));
    want.insert(want.end(), 500, i);
  }
  EXPECT_EQ(cat(pieces, 0).to_vector<int64_t>(), want);
  Tensor a = arange(200000, {kF32}).reshape({1000, 200}), b = a.t();
  Tensor c = cat({a, b.t(), a}, 1);  // [1000, 600]
  EXPECT_EQ(c.shape(), Shape({1000, 600}));
  auto cv = c.to_vector<float>();
  for (int64_t r = 0; r < 1000; r += 111)
    for (int64_t k = 0; k < 600; k += 7)
      ASSERT_EQ(cv[size_t(r * 600 + k)], float(r * 200 + k % 200));
}

TEST(LayoutLarge, FlipRollRepeatTriangles) {
  const int64_t n = 300, m = 400;
  Tensor x = arange(n * m, {kI32}).reshape({n, m});
  auto f = flip(x.t(), {0, 1}).to_vector<int32_t>();  // [m, n]
  for (int64_t i = 0; i < m; i += 13)
    for (int64_t j = 0; j < n; j += 11)
      ASSERT_EQ(f[size_t(i * n + j)], int32_t((n - 1 - j) * m + (m - 1 - i)));
  auto r = roll(x, {-5, 123}, {0, 1}).to_vector<int32_t>();
  for (int64_t i = 0; i < n; i += 17)
    for (int64_t j = 0; j < m; j += 19)
      ASSERT_EQ(r[size_t(i * m + j)], int32_t(((i + 5) % n) * m + (j - 123 + m) % m));
  auto rp = repeat(x.slice(1, 0, 4), {2, 1, 3}).to_vector<int32_t>();  // [2, 300, 12]
  for (int64_t k = 0; k < 2 * n * 12; k += 29) {
    int64_t i = (k / 12) % n, j = (k % 12) % 4;
    ASSERT_EQ(rp[size_t(k)], int32_t(i * m + j));
  }
  Tensor b = ones({8, 100, 90}, {kF16});
  auto lo = tril(b, -3).to_vector<float>(), up = triu(b, 5).to_vector<float>();
  for (int64_t k = 0; k < b.numel(); k += 7) {
    int64_t i = (k / 90) % 100, j = k % 90;
    ASSERT_EQ(lo[size_t(k)], j <= i - 3 ? 1.f : 0.f);
    ASSERT_EQ(up[size_t(k)], j >= i + 5 ? 1.f : 0.f);
  }
}

TEST(LayoutLarge, PadModesMatchIndexFormulas) {
  const int64_t h = 200, w = 300;
  Tensor x = arange(h * w, {kF64}).reshape({1, h, w});
  auto rf = pad(x, {3, 2, 1, 4}, "reflect").to_vector<double>();
  auto rp = pad(x, {3, 2, 1, 4}, "replicate").to_vector<double>();
  auto ci = pad(x, {3, 2, 1, 4}, "circular").to_vector<double>();
  const int64_t oh = h + 5, ow = w + 5;
  auto refl = [](int64_t i, int64_t n) { return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i; };
  for (int64_t i = 0; i < oh; i += 7)
    for (int64_t j = 0; j < ow; j += 3) {
      int64_t si = i - 1, sj = j - 3;
      ASSERT_EQ(rf[size_t(i * ow + j)], double(refl(si, h) * w + refl(sj, w)));
      ASSERT_EQ(rp[size_t(i * ow + j)], double(std::clamp<int64_t>(si, 0, h - 1) * w +
                                                std::clamp<int64_t>(sj, 0, w - 1)));
      ASSERT_EQ(ci[size_t(i * ow + j)], double(((si + h) % h) * w + (sj + w) % w));
    }
  auto cp = pad(x, {-1, 1, 2, 0}, "constant", 5).to_vector<double>();
  EXPECT_EQ(cp[0], 5.0);
  EXPECT_EQ(cp[size_t(2 * w)], 1.0);  // row 2 holds x's row 0 from column 1
}

TEST(LayoutLarge, StackAndRepeatInterleave) {
  Tensor a = arange(50000, {kI64}), b = a * 2;
  Tensor s = stack({a, b}, 1);
  EXPECT_EQ(s.shape(), Shape({50000, 2}));
  EXPECT_EQ(s.select(0, 777).to_vector<int64_t>(), (std::vector<int64_t>{777, 1554}));
  Tensor ri = repeat_interleave(a, 3);
  EXPECT_EQ(ri.numel(), 150000);
  EXPECT_EQ(ri.select(0, 3 * 4321 + 2).item<int64_t>(), 4321);
  Tensor rt = repeat_interleave(a.slice(0, 0, 4), tensor<int64_t>({0, 1, 2, 3}));
  EXPECT_EQ(rt.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 2, 3, 3, 3}));
}

TEST(LayoutLarge, RepeatPastTheLoopEngineRank) {
  Shape s(10, 2), reps(10, 2);
  Tensor x = arange(1024, {kI16}).reshape(s);
  Tensor r = repeat(x, reps);
  EXPECT_EQ(r.numel(), 1024 * 1024);
  // The element at all-ones coordinates in every (rep, dim) pair equals x's last element.
  EXPECT_EQ(r.flatten().select(0, r.numel() - 1).item<int64_t>(), 1023);
  EXPECT_EQ(r.sum().item<int64_t>(), int64_t(1024) * (1023 * 1024 / 2));
}

TEST(LayoutLarge, TransposedCopiesTakeTheTiledPath) {
  const int64_t b = 3, h = 100, w = 70;
  Tensor x = arange(b * h * w, {kI32}).reshape({b, h, w});
  auto y = x.permute({0, 2, 1}).contiguous().to_vector<int32_t>();  // [b, w, h]
  for (int64_t k = 0; k < b * w * h; ++k) {
    int64_t i = k / (w * h), j = (k / h) % w, q = k % h;
    ASSERT_EQ(y[size_t(k)], int32_t((i * h + q) * w + j)) << k;
  }
  auto f = flip(x.transpose(1, 2), {2}).to_vector<int32_t>();  // negative strides, transposed
  for (int64_t k = 0; k < b * w * h; k += 3) {
    int64_t i = k / (w * h), j = (k / h) % w, q = h - 1 - k % h;
    ASSERT_EQ(f[size_t(k)], int32_t((i * h + q) * w + j)) << k;
  }
  Tensor d = empty({w, h}, {kI32});
  d.copy_(x.select(0, 1).t());
  EXPECT_TRUE(equal(d, x.select(0, 1).t().contiguous()));
}

// pad and stack have flex kernels; their decompositions (for backends without one) must agree.
TEST(LayoutDecompositions, MatchTheFlexKernels) {
  manual_seed(5);
  Tensor x = randn({2, 3, 5, 6}).transpose(1, 3);  // [2, 6, 5, 3], non-contiguous
  for (std::string mode : {"constant", "reflect", "replicate", "circular"})
    for (Shape p : {Shape{1, 2}, Shape{2, 1, 1, 2}, Shape{-1, 2, 1, -2}, Shape{1, 1, 2, 0, 0, 1}}) {
      Attrs a;
      a.ints = p;
      a.mode = uint8_t(ops::parse_pad_mode("pad", mode));
      a.f[0] = 0.5;
      Tensor in[] = {x};
      Tensor got = op_def(OpId::pad).decompose(a, std::span<const Tensor>(in)).at(0);
      EXPECT_TRUE(equal(got, pad(x, p, mode, 0.5))) << mode << " " << shape_str(p);
    }
  Attrs a;
  a.i[0] = -2;
  Tensor in[] = {x, x.to(kI32), x.to(kF64)};
  Tensor got = op_def(OpId::stack).decompose(a, std::span<const Tensor>(in)).at(0);
  EXPECT_TRUE(equal(got, stack({in[0], in[1], in[2]}, -2)));
}

}  // namespace
}  // namespace ember

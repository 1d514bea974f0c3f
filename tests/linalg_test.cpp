// Matrix products and convolutions beyond the goldens: sizes that cross the GEMM's cache blocks
// and the conv column chunks (checked against plain reference loops), the batched and threaded
// paths, the decompositions other backends fall back to, and error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ember/ember.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

namespace F = nn::functional;

// Reference C = A @ B in double for 2-D tensors of any layout.
std::vector<double> ref_mm(const Tensor& a, const Tensor& b) {
  auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  std::vector<double> c(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double s = av[size_t(i * k + p)];
      for (int64_t j = 0; j < n; ++j) c[size_t(i * n + j)] += s * bv[size_t(p * n + j)];
    }
  return c;
}

void expect_near(const Tensor& got, const std::vector<double>& want, double tol) {
  auto g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::fabs(g[i] - want[i]));
  EXPECT_LE(worst, tol);
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  expect_near(got, want.to_vector<double>(), tol);
}

TEST(Gemm, CrossesEveryCacheBlock) {
  manual_seed(1);
  // m past the row block (2040), k past the depth block (512 floats), a transposed.
  Tensor a = randn({600, 2100}).t(), b = randn({600, 40});
  expect_near(mm(a, b), ref_mm(a, b), 2e-3);
  // n past the column block (512), k past one depth block, b transposed.
  Tensor c = randn({37, 530}), d = randn({1100, 530}).t();
  expect_near(mm(c, d), ref_mm(c, d), 2e-3);
  // float64 uses its own tile (8 lanes) and depth block (256).
  Tensor e = randn({70, 300}, {kF64}), f = randn({300, 45}, {kF64}).slice(0, 0, 300, 1);
  expect_near(mm(e, f), ref_mm(e, f), 1e-10);
  // Row-major A and column-major B are packed through 8 x 8 (4 x 4 for f64) register
  // transposes: odd sizes leave partial tiles on both sides. Up to 32 rows, the product is
  // taken as 4 x 4 blocks of dot products instead (edge blocks, a depth tail).
  Tensor g = randn({45, 301}, {kF64}).t();
  for (int64_t m : {50, 29}) {
    Tensor h = randn({m, 301}, {kF64});
    expect_near(mm(h, g), ref_mm(h, g), 1e-10);
  }
  for (int64_t m : {45, 13}) {
    Tensor x = randn({m, 77}), w = randn({21, 77});
    expect_near(mm(x, w.t()), ref_mm(x, w.t()), 1e-4);
    std::vector<double> want = ref_mm(x, w.t());
    for (double& v : want) v += 1;  // linear accumulates the product onto its bias
    expect_near(linear(x, w, ones({21})), want, 1e-4);
  }
  // A last sliver of 4 or 8 rows runs a kernel of that many rows, full or partial in n.
  for (int64_t m : {16, 20, 7}) {
    Tensor p = randn({m, 50}), q = randn({50, 64 + 5});
    expect_near(mm(p, q), ref_mm(p, q), 1e-4);
  }
}

TEST(Gemm, StridedAndVectorShapes) {
  manual_seed(2);
  Tensor a = randn({40, 90}).slice(1, 0, 90, 3), b = randn({60, 33}).slice(0, 0, 60, 2);
  expect_near(mm(a, b), ref_mm(a, b), 1e-4);
  Tensor row = randn({1, 700}), col = randn({700, 1});
  Tensor big = randn({700, 300});
  expect_near(mm(row, big), ref_mm(row, big), 1e-3);
  expect_near(mm(big.t(), col), ref_mm(big.t(), col), 1e-3);
  expect_near(mm(row, big.t().t()), ref_mm(row, big), 1e-3);
  expect_near(mm(big.t(), big.slice(1, 0, 1, 1)), ref_mm(big.t(), big.slice(1, 0, 1, 1)), 1e-3);
}

TEST(Gemm, IntegersWrapLikeTorch) {
  Tensor a = full({2, 3}, 100, {kI8}), b = full({3, 2}, 2, {kI8});
  // 3 * 200 = 600 wraps to 600 - 512 = 88 in int8
  EXPECT_EQ(mm(a, b).to_vector<int64_t>(), (std::vector<int64_t>{88, 88, 88, 88}));
  Tensor big = full({1, 2}, int64_t(1) << 62, {kI64});
  EXPECT_EQ(matmul(big, full({2}, 2, {kI64})).item<int64_t>(), 0);  // wraps, no UB
}

TEST(Matmul, BatchedPathsMatchPerBatchProducts) {
  manual_seed(3);
  // Many small products run one per thread; few large ones split each product.
  for (Shape batch : {Shape{64}, Shape{3}}) {
    const int64_t n = batch[0] == 64 ? 5 : 70;
    Shape sa = batch, sb = batch;
    sa.push_back(n), sa.push_back(n + 3), sb.push_back(n + 3), sb.push_back(n - 1);
    Tensor a = randn(sa), b = randn(sb).transpose(1, 2).contiguous().transpose(1, 2);
    Tensor c = bmm(a, b);
    for (int64_t i = 0; i < batch[0]; i += batch[0] / 3)
      expect_near(c[i], ref_mm(a[i], b[i]), 1e-3);
  }
  // Broadcast batch dims keep their zero strides (no copies) and still match.
  Tensor x = randn({2, 1, 4, 6}), y = randn({5, 6, 3});
  Tensor z = matmul(x, y);
  ASSERT_EQ(z.shape(), Shape({2, 5, 4, 3}));
  expect_near(z.select(0, 1).select(0, 4), ref_mm(x.select(0, 1).select(0, 0), y[4]), 1e-4);
}

TEST(Matmul, MethodAndHalfPrecision) {
  manual_seed(4);
  Tensor a = randn({3, 4}), b = randn({4, 2});
  expect_close(a.matmul(b), matmul(a, b), 0);
  for (DType d : {kF16, kBF16}) {
    Tensor h = matmul(a.to(d), b.to(d));
    EXPECT_EQ(h.dtype(), d);
    expect_near(h, ref_mm(a.to(d), b.to(d)), 0.05);
  }
}

// Runs `op`'s decomposition directly (what a backend without the kernel falls back to).
Tensor decomposed(OpId op, std::initializer_list<Tensor> in) {
  std::vector<Tensor> v(in);
  return op_def(op).decompose(Attrs{}, v).front();
}

TEST(Matmul, DecompositionsMatchKernels) {
  manual_seed(5);
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4}, {4}}, {{4}, {4, 3}}, {{3, 4}, {4}}, {{3, 4}, {4, 2}}, {{2, 3, 4}, {4, 5}},
      {{2, 3, 4}, {4}}, {{4}, {2, 4, 3}}, {{2, 1, 3, 4}, {5, 4, 2}}, {{2, 3, 0}, {0, 4}},
      {{2, 1, 3, 0}, {2, 0, 4}}, {{0, 3, 4}, {4, 2}}};
  for (const auto& [sa, sb] : shapes) {
    Tensor a = randn(sa), b = randn(sb);
    expect_close(decomposed(OpId::matmul, {a, b}), matmul(a, b), 1e-5);
  }
  Tensor x = randn({2, 3, 4}), w = randn({5, 4}), bias = randn({5});
  expect_close(decomposed(OpId::linear, {x, w, bias}), linear(x, w, bias), 1e-5);
  expect_close(decomposed(OpId::linear, {x, w, Tensor()}), linear(x, w), 1e-5);
  Tensor i = arange(5, {kI32}), j = arange(5, {kI32});
  expect_close(decomposed(OpId::dot, {i, j}), dot(i, j), 0);
  expect_close(decomposed(OpId::dot, {x.flatten(), x.flatten()}), dot(x.flatten(), x.flatten()),
               1e-4);
}

TEST(Matmul, ErrorsNameTheOpAndBothShapes) {
  try {
    matmul(ones({2, 3}), ones({4, 5}));
    FAIL();
  } catch (const ShapeError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("[matmul]"), std::string::npos) << w;
    EXPECT_NE(w.find("[2, 3]"), std::string::npos) << w;
    EXPECT_NE(w.find("[4, 5]"), std::string::npos) << w;
  }
  try {
    mm(ones({2, 3}), ones({3, 2}, {kF64}));
    FAIL();
  } catch (const DTypeError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("float32"), std::string::npos) << w;
    EXPECT_NE(w.find("float64"), std::string::npos) << w;
  }
  EXPECT_THROW(bmm(ones({2, 3}), ones({3, 2})), ShapeError);
  EXPECT_THROW(linear(ones({2, 3}), Tensor()), ValueError);
}

TEST(Einsum, AgreesWithProductsOnLargerShapes) {
  manual_seed(6);
  Tensor a = randn({3, 20, 30}), b = randn({30, 25}), c = randn({25, 7});
  expect_close(einsum("bij,jk,kl->bil", {a, b, c}), matmul(matmul(a, b), c), 1e-3);
  expect_close(einsum("bij->bji", {a}), a.transpose(1, 2).contiguous(), 0);
  Tensor sq = randn({5, 5});
  EXPECT_NEAR(einsum("ii", {sq}).item<double>(), sq.diagonal().sum().item<double>(), 1e-5);
  // The same label on three operands that also reaches the output.
  Tensor x = randn({4, 3}), y = randn({4, 3}), z = randn({4});
  expect_close(einsum("ij,ij,i->i", {x, y, z}), (x * y).sum({1}) * z, 1e-5);
}

// Brute force over every assignment of the labels, for random equations (explicit output).
TEST(Einsum, MatchesBruteForceOnRandomEquations) {
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    const int nl = pick(1, 4);
    std::vector<int64_t> size(static_cast<size_t>(nl));
    for (auto& s : size) s = pick(0, 9) == 0 ? 0 : pick(1, 3);
    std::vector<std::vector<int>> terms(static_cast<size_t>(pick(1, 3)));
    std::vector<bool> used(static_cast<size_t>(nl), false);
    std::vector<Tensor> ops;
    std::string eq;
    for (size_t i = 0; i < terms.size(); ++i) {
      Shape shape;
      for (int d = pick(0, 3); d > 0; --d) {
        int l = pick(0, nl - 1);
        terms[i].push_back(l);
        used[size_t(l)] = true;
        eq += char('a' + l);
        // Now and then a broadcast dim of size 1 (never for repeated labels, which must match).
        bool repeated = std::count(terms[i].begin(), terms[i].end(), l) > 1;
        shape.push_back(!repeated && pick(0, 5) == 0 ? 1 : size[size_t(l)]);
      }
      for (size_t a = 0; a < terms[i].size(); ++a)  // a repeated label keeps one size
        for (size_t b = 0; b < a; ++b)
          if (terms[i][a] == terms[i][b]) shape[a] = shape[b];
      ops.push_back(randn(shape, {kF64}));
      eq += i + 1 < terms.size() ? "," : "->";
    }
    std::vector<int> out;
    for (int l = 0; l < nl; ++l)
      if (used[size_t(l)] && pick(0, 1)) out.push_back(l);
    std::shuffle(out.begin(), out.end(), rng);
    for (int l : out) eq += char('a' + l);
    // Broadcast sizes per label: a size-1 dim on one operand takes the others' size.
    std::vector<int64_t> full(static_cast<size_t>(nl), 1);
    for (size_t i = 0; i < ops.size(); ++i)
      for (size_t d = 0; d < terms[i].size(); ++d)
        if (ops[i].size(int64_t(d)) != 1) full[size_t(terms[i][d])] = ops[i].size(int64_t(d));
    Shape out_shape;
    for (int l : out) out_shape.push_back(full[size_t(l)]);
    std::vector<double> want(static_cast<size_t>(numel_of(out_shape)), 0.0);
    std::vector<std::vector<double>> vals;
    for (const Tensor& t : ops) vals.push_back(t.to_vector<double>());
    std::vector<int64_t> at(static_cast<size_t>(nl), 0);
    for (bool more = numel_of(std::span<const int64_t>(full)) > 0; more;) {
      double prod = 1;
      for (size_t i = 0; i < ops.size(); ++i) {
        int64_t flat = 0;
        for (size_t d = 0; d < terms[i].size(); ++d) {
          const int64_t s = ops[i].size(int64_t(d));
          flat = flat * s + (s == 1 ? 0 : at[size_t(terms[i][d])]);
        }
        prod *= vals[i][size_t(flat)];
      }
      int64_t o = 0;
      for (int l : out) o = o * full[size_t(l)] + at[size_t(l)];
      want[size_t(o)] += prod;
      more = false;
      for (int l = nl - 1; l >= 0 && !more; --l) {
        if (++at[size_t(l)] < full[size_t(l)]) more = true;
        else at[size_t(l)] = 0;
      }
    }
    SCOPED_TRACE(eq);
    Tensor got = einsum(eq, ops);
    ASSERT_EQ(got.shape(), out_shape);
    expect_near(got, want, 1e-9);
  }
}

// Plain direct convolution, batched NC(D)HW in 3-D form, for checking the im2col path.
std::vector<double> ref_conv2d(const Tensor& x, const Tensor& w, int64_t stride, int64_t pad,
                               int64_t dil, int64_t groups, Shape& out_shape) {
  auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t o = w.size(0), cg = w.size(1), kh = w.size(2), kw = w.size(3), og = o / groups;
  const int64_t oh = (h + 2 * pad - dil * (kh - 1) - 1) / stride + 1;
  const int64_t ow = (wd + 2 * pad - dil * (kw - 1) - 1) / stride + 1;
  out_shape = {n, o, oh, ow};
  std::vector<double> out(size_t(n * o * oh * ow), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double s = 0;
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t iy = y * stride - pad + ky * dil, ix = xx * stride - pad + kx * dil;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                int64_t ch = oc / og * cg + ic;
                s += xv[size_t(((b * c + ch) * h + iy) * wd + ix)] *
                     wv[size_t(((oc * cg + ic) * kh + ky) * kw + kx)];
              }
          out[size_t(((b * o + oc) * oh + y) * ow + xx)] = s;
        }
  return out;
}

TEST(Conv, LargeShapesMatchDirectConvolution) {
  manual_seed(7);
  struct P { Shape x, w; int64_t stride, pad, dil, groups; };
  // One sample (each GEMM split over threads, several column chunks), a batch (one task per
  // sample and group), strided/dilated, and depthwise.
  for (const P& p : {P{{1, 64, 40, 40}, {8, 64, 3, 3}, 1, 1, 1, 1},
                     P{{6, 8, 20, 17}, {6, 4, 3, 3}, 1, 1, 1, 2},
                     P{{2, 6, 23, 19}, {4, 6, 3, 2}, 2, 2, 2, 1},
                     P{{3, 8, 12, 12}, {8, 1, 5, 5}, 1, 2, 1, 8}}) {
    Tensor x = randn(p.x), w = randn(p.w);
    Shape shape;
    auto want = ref_conv2d(x, w, p.stride, p.pad, p.dil, p.groups, shape);
    Tensor y = F::conv2d(x, w, {}, {.stride = {p.stride}, .padding = {p.pad}, .dilation = {p.dil},
                                    .groups = p.groups});
    ASSERT_EQ(y.shape(), shape);
    expect_near(y, want, 2e-3);
  }
}

TEST(Conv, RandomGeometriesMatchDirectConvolution) {
  std::mt19937 rng(12);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t groups = pick(1, 3), cg = pick(1, 3), og = pick(1, 3);
    const int64_t k0 = pick(1, 3), k1 = pick(1, 3), s = pick(1, 3), p = pick(0, 2), d = pick(1, 2);
    const int64_t h = pick(1, 9) + d * (k0 - 1), w = pick(1, 9) + d * (k1 - 1);
    Tensor x = randn({pick(1, 3), groups * cg, h, w}), wt = randn({groups * og, cg, k0, k1});
    if (pick(0, 1)) x = x.transpose(2, 3).contiguous().transpose(2, 3);
    Shape shape;
    auto want = ref_conv2d(x, wt, s, p, d, groups, shape);
    SCOPED_TRACE(::testing::Message() << x.shape() << wt.shape() << " s" << s << " p" << p
                                      << " d" << d << " g" << groups);
    Tensor y =
        F::conv2d(x, wt, {}, {.stride = {s}, .padding = {p}, .dilation = {d}, .groups = groups});
    ASSERT_EQ(y.shape(), shape);
    expect_near(y, want, 1e-4);
    // conv_transpose2d with the same geometry is the adjoint: <conv(x), y> = <x, conv_t(y)>.
    const int64_t op0 = (h + 2 * p - d * (k0 - 1) - 1) % s,
                  op1 = (w + 2 * p - d * (k1 - 1) - 1) % s;
    Tensor r = randn(y.shape());
    F::ConvTransposeOptions to{
        .stride = {s}, .padding = {p}, .output_padding = {op0, op1}, .groups = groups,
        .dilation = {d}};
    Tensor t = F::conv_transpose2d(r, wt, {}, to);
    ASSERT_EQ(t.shape(), x.shape());
    EXPECT_NEAR((y * r).sum().item<double>(), (x * t).sum().item<double>(), 1e-3);
  }
}

TEST(Conv, TransposeIsTheAdjointOfConv) {
  // <conv(x, w), y> == <x, conv_transpose(y, w)> for matching geometry.
  manual_seed(8);
  Tensor x = randn({2, 6, 30, 28}), w = randn({4, 3, 3, 2}), y = randn({2, 4, 15, 14});
  F::ConvOptions fo{.stride = {2}, .padding = {1}, .dilation = {1, 2}, .groups = 2};
  Tensor cx = F::conv2d(x, w, {}, fo);
  ASSERT_EQ(cx.shape(), y.shape());
  F::ConvTransposeOptions to{.stride = {2}, .padding = {1}, .output_padding = {1, 1},
                             .groups = 2, .dilation = {1, 2}};
  Tensor ty = F::conv_transpose2d(y, w, {}, to);
  ASSERT_EQ(ty.shape(), x.shape());
  EXPECT_NEAR((cx * y).sum().item<double>(), (x * ty).sum().item<double>(), 1e-2);
}

TEST(Conv, FoldOfUnfoldCountsOverlaps) {
  manual_seed(9);
  Tensor x = randn({2, 3, 9, 8});
  for (int64_t s : {1, 2}) {
    Tensor cols = F::unfold(x, {3, 2}, {1}, {1}, {s});
    Tensor back = F::fold(cols, {9, 8}, {3, 2}, {1}, {1}, {s});
    Tensor count =
        F::fold(F::unfold(ones_like(x), {3, 2}, {1}, {1}, {s}), {9, 8}, {3, 2}, {1}, {1}, {s});
    expect_close(back, x * count, 1e-5);
  }
  // unfold is im2col: a conv is one matmul with it.
  Tensor w = randn({4, 3, 3, 3});
  Tensor via_unfold = matmul(w.reshape({4, -1}), F::unfold(x, {3}, {1}, {1})).reshape({2, 4, 9, 8});
  expect_close(F::conv2d(x, w, {}, {.padding = {1}}), via_unfold, 1e-4);
}

TEST(Conv, HalfPrecisionRunsInFloat) {
  manual_seed(10);
  Tensor x = randn({1, 2, 6, 6}), w = randn({3, 2, 3, 3}), b = randn({3});
  Tensor ref = F::conv2d(x, w, b, {.padding = {1}});
  for (DType d : {kF16, kBF16}) {
    Tensor y = F::conv2d(x.to(d), w.to(d), b.to(d), {.padding = {1}});
    EXPECT_EQ(y.dtype(), d);
    expect_near(y, ref.to_vector<double>(), 0.25);
  }
}

}  // namespace
}  // namespace ember

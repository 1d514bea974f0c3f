// The flex GEMM's paths, called directly on every instruction set this CPU runs: dot-product
// blocks (few rows of A against a column-major B), matrix-vector shapes, B read in place (few
// rows against a row-major B), packed blocks across the depth and column blocks, the bias
// epilogue, accumulation, strided operands and a padded C, checked against a double reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ember/backends/flex/gemm.h"
#include "ember/backends/flex/gemm_kernel.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ember.h"

namespace ember {
namespace {

using flex::GemmIsa;
using flex::MatRef;

// The instruction sets this build and CPU run; set_gemm_isa is restored on scope exit.
struct IsaGuard {
  GemmIsa old = flex::gemm_isa();
  ~IsaGuard() { flex::set_gemm_isa(old); }
};
std::vector<GemmIsa> runnable_isas() {
  IsaGuard g;
  std::vector<GemmIsa> r;
  for (GemmIsa i : {GemmIsa::Baseline, GemmIsa::Avx2, GemmIsa::Avx512})
    if (flex::set_gemm_isa(i)) r.push_back(i);
  return r;
}

enum class Layout { RowMajor, ColMajor, Strided };  // Strided: neither stride is 1

// A rows x cols operand with random values in a buffer of the given layout (a gap between rows
// or columns, so that the leading dimension is not the extent).
template <class T>
struct Operand {
  std::vector<T> buf;
  MatRef<T> ref;
  Operand(int64_t rows, int64_t cols, Layout l, std::mt19937& rng) {
    std::normal_distribution<double> nd;
    int64_t rs, cs;
    switch (l) {
      case Layout::RowMajor: rs = cols + 3, cs = 1; break;
      case Layout::ColMajor: rs = 1, cs = rows + 2; break;
      default: rs = 2 * cols + 1, cs = 2; break;
    }
    buf.resize(size_t(std::max<int64_t>(1, (rows - 1) * rs + (cols - 1) * cs + 1)));
    for (T& v : buf) v = T(nd(rng));
    ref = {buf.data(), rs, cs};
  }
  double at(int64_t i, int64_t j) const { return double(ref.p[i * ref.rs + j * ref.cs]); }
};

struct Case {
  int64_t m, n, k;
  Layout la, lb;
  bool accumulate, bias;
  int64_t ldc_pad;
};

std::string describe(const Case& c) {
  static const char* names[] = {"row", "col", "strided"};
  return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " A " + names[int(c.la)] + " B " + names[int(c.lb)] + (c.accumulate ? " acc" : "") +
         (c.bias ? " bias" : "") + " isa " + flex::gemm_isa_name(flex::gemm_isa());
}

// Runs one product and returns C (row stride n + ldc_pad) after checking it against a double
// reference to `tol` per unit of depth.
template <class T>
std::vector<T> check(const Case& c, uint32_t seed, double tol) {
  std::mt19937 rng(seed);
  Operand<T> a(c.m, c.k, c.la, rng), b(c.k, c.n, c.lb, rng);
  const int64_t ldc = c.n + c.ldc_pad;
  std::vector<T> out(size_t(c.m * ldc)), bias(size_t(c.n));
  std::normal_distribution<double> nd;
  for (T& v : out) v = T(nd(rng));
  for (T& v : bias) v = T(nd(rng));
  const std::vector<T> before = out;
  flex::gemm<T>(c.m, c.n, c.k, a.ref, b.ref, out.data(), ldc, c.accumulate,
                c.bias ? bias.data() : nullptr);
  double worst = 0;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double want = c.accumulate ? double(before[size_t(i * ldc + j)]) : 0.0;
      if (c.bias) want += double(bias[size_t(j)]);
      for (int64_t p = 0; p < c.k; ++p) want += a.at(i, p) * b.at(p, j);
      worst = std::max(worst, std::fabs(double(out[size_t(i * ldc + j)]) - want));
    }
    for (int64_t j = c.n; j < ldc; ++j)  // the padding between C's rows is left alone
      EXPECT_EQ(out[size_t(i * ldc + j)], before[size_t(i * ldc + j)]) << describe(c);
  }
  EXPECT_LE(worst, tol * double(c.k + 1)) << describe(c);
  return out;
}

// Shapes around every path's edges: m = 1 (matrix-vector or one dot row), row counts that are
// not whole dot blocks or micro-kernel slivers, n below and just past the dot block and the
// tile, k = 1 and depths that leave a vector tail.
const int64_t kRows[] = {1, 3, 16, 17, 33, 50};
const int64_t kCols[] = {1, 5, 7, 97};
const int64_t kDepths[] = {1, 17, 300};
const std::pair<Layout, Layout> kLayouts[] = {{Layout::RowMajor, Layout::ColMajor},
                                              {Layout::RowMajor, Layout::RowMajor},
                                              {Layout::ColMajor, Layout::RowMajor},
                                              {Layout::ColMajor, Layout::ColMajor},
                                              {Layout::Strided, Layout::Strided}};

template <class T>
void every_small_shape(double tol) {
  IsaGuard g;
  for (GemmIsa isa : runnable_isas()) {
    ASSERT_TRUE(flex::set_gemm_isa(isa));
    uint32_t seed = 0;
    for (int64_t m : kRows)
      for (int64_t n : kCols)
        for (int64_t k : kDepths)
          for (auto [la, lb] : kLayouts) {
            ++seed;
            const Case c{m, n, k, la, lb, seed % 2 == 0, seed % 3 == 0, int64_t(seed % 2)};
            check<T>(c, seed, tol);
          }
  }
}

TEST(Gemm, SmallAndSkinnyShapesOnEveryIsa) {
  every_small_shape<float>(2e-5);
  every_small_shape<double>(1e-13);
}

TEST(Gemm, ReportsTheIsaInUse) {
  const std::vector<GemmIsa> isas = runnable_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), GemmIsa::Baseline);
  EXPECT_EQ(flex::gemm_isa(), isas.back());  // the widest by default
  IsaGuard g;
  if (isas.size() < 3) EXPECT_FALSE(flex::set_gemm_isa(GemmIsa::Avx512));
  EXPECT_STREQ(flex::gemm_isa_name(GemmIsa::Avx2), "avx2");
}

// Products past the depth, column and in-place limits, large enough to be split over threads:
// the split gives every element to one thread, so the result is bitwise the one-thread result.
TEST(Gemm, BlocksAndThreadSplitsOnEveryIsa) {
  IsaGuard g;
  const std::vector<Case> cases = {
      {130, 530, 700, Layout::RowMajor, Layout::ColMajor, false, true, 0},   // packed, W^T
      {36, 800, 520, Layout::RowMajor, Layout::RowMajor, true, true, 1},     // B in place
      {40, 800, 520, Layout::RowMajor, Layout::RowMajor, false, false, 0},   // B packed
      {30, 700, 600, Layout::RowMajor, Layout::ColMajor, false, true, 0},    // dot blocks
      {520, 10, 400, Layout::RowMajor, Layout::ColMajor, true, false, 0},    // split by rows
      {300, 64, 300, Layout::RowMajor, Layout::RowMajor, false, true, 0},    // rows: A packs less
      {500, 300, 20, Layout::ColMajor, Layout::RowMajor, false, false, 3},   // small depth
      {1, 3000, 700, Layout::RowMajor, Layout::ColMajor, false, true, 0},    // x @ W^T, batch 1
      {1, 3000, 700, Layout::RowMajor, Layout::RowMajor, true, true, 0},     // vector-matrix
      {3000, 1, 700, Layout::RowMajor, Layout::ColMajor, false, true, 0}};   // matrix-vector
  const int threads = flex::num_threads();
  for (GemmIsa isa : runnable_isas()) {
    ASSERT_TRUE(flex::set_gemm_isa(isa));
    uint32_t seed = 100;
    for (const Case& c : cases) {
      const std::vector<float> many = check<float>(c, ++seed, 1e-5);
      flex::set_num_threads(1);
      const std::vector<float> one = check<float>(c, seed, 1e-5);
      flex::set_num_threads(threads);
      EXPECT_EQ(many, one) << describe(c);
    }
    check<double>(cases[0], 7, 1e-13);
    check<double>(cases[1], 8, 1e-13);
  }
}

TEST(Gemm, EmptyDepthWritesBiasOrZeros) {
  for (bool acc : {false, true})
    for (bool bias : {false, true})
      check<float>({4, 9, 0, Layout::RowMajor, Layout::RowMajor, acc, bias, 2}, 5, 1e-6);
}

TEST(Gemm, IntegersTakeTheBias) {
  const std::vector<int32_t> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, bias = {100, 200};
  std::vector<int32_t> c(4);
  flex::gemm<int32_t>(2, 2, 2, {a.data(), 2, 1}, {b.data(), 2, 1}, c.data(), 2, false,
                      bias.data());
  EXPECT_EQ(c, (std::vector<int32_t>{119, 222, 143, 250}));
}

// linear adds a per-feature bias inside the GEMM; other biases (strided, or the scalar one of a
// 1-D weight) go through a separate write; both match mm + add.
TEST(Linear, FusedAndSeparateBiasMatchMatmulPlusBias) {
  manual_seed(11);
  for (int64_t batch : {1, 16, 40, 130}) {
    Tensor x = randn({batch, 70}), w = randn({33, 70}), b = randn({33});
    EXPECT_TRUE(allclose(linear(x, w, b), mm(x, w.t()) + b, 1e-5, 1e-4)) << batch;
    Tensor strided = randn({66}).slice(0, 0, 66, 2);
    EXPECT_TRUE(allclose(linear(x, w, strided), mm(x, w.t()) + strided, 1e-5, 1e-4)) << batch;
  }
  Tensor x3 = randn({2, 5, 70}), w = randn({33, 70}), b = randn({33});
  EXPECT_TRUE(allclose(linear(x3, w, b), matmul(x3, w.t()) + b, 1e-5, 1e-4));
  Tensor xt = randn({70, 2, 5}).permute({1, 2, 0});  // batch dims that do not fold into rows
  EXPECT_TRUE(allclose(linear(xt, w, b), matmul(xt, w.t()) + b, 1e-5, 1e-4));
  Tensor v = randn({70}), s = randn({});
  EXPECT_TRUE(allclose(linear(x3, v, s), matmul(x3, v) + s, 1e-5, 1e-4));
  Tensor xd = randn({16, 70}, {kF64}), wd = randn({33, 70}, {kF64}), bd = randn({33}, {kF64});
  EXPECT_TRUE(allclose(linear(xd, wd, bd), mm(xd, wd.t()) + bd, 1e-12, 1e-12));
}

}  // namespace
}  // namespace ember

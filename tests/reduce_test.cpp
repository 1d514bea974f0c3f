// Reductions, scans and order statistics beyond the golden cases: tensors large enough to take
// the parallel and blocked paths (checked against plain loops), result dtypes and error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ember/ember.h"

namespace ember {
namespace {

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// Row-major [rows, cols] data: element (r, c).
struct Grid {
  std::vector<double> v;
  int64_t rows, cols;
  double at(int64_t r, int64_t c) const { return v[size_t(r * cols + c)]; }
};
Grid grid(const Tensor& t) { return {values(t), t.size(0), t.size(1)}; }

TEST(ReduceLarge, SumTakesEveryEnginePath) {
  manual_seed(1);
  Tensor x = randn({2, 200000});  // few outputs, long rows: split across threads
  Grid g = grid(x);
  auto s = values(sum(x, {1}));
  for (int64_t r = 0; r < 2; ++r) {
    double want = 0;
    for (int64_t c = 0; c < g.cols; ++c) want += g.at(r, c);
    EXPECT_NEAR(s[size_t(r)], want, 1e-2);
  }
  Tensor y = randn({700, 300});  // column reduction, and the same data transposed
  Grid h = grid(y);
  auto cols = values(sum(y, {0}));
  auto rows_t = values(sum(y.t(), {1}));
  for (int64_t c = 0; c < 300; ++c) {
    double want = 0;
    for (int64_t r = 0; r < 700; ++r) want += h.at(r, c);
    EXPECT_NEAR(cols[size_t(c)], want, 1e-3);
    EXPECT_NEAR(rows_t[size_t(c)], want, 1e-3);
  }
  EXPECT_NEAR(sum(y).item<double>(), std::accumulate(h.v.begin(), h.v.end(), 0.0), 1e-2);
}

TEST(ReduceLarge, LongFloatSumsStayAccurate) {
  // 16M copies of 0.1f: a running float sum drifts by percents (15% for one accumulator);
  // chunks combined pairwise keep the error near float's resolution, whatever the thread count
  // and whichever path (lanes, blocks across threads, columns, transposed) runs.
  Tensor x = full({1 << 24}, 0.1);
  const double want = double(0.1f) * double(1 << 24);
  EXPECT_NEAR(sum(x).item<double>(), want, want * 5e-6);
  auto rows = sum(x.reshape({16, 1 << 20}), {1}).to_vector<double>();
  EXPECT_NEAR(rows[0], want / 16, want / 16 * 5e-6);
  EXPECT_NEAR(mean(x.reshape({1 << 12, 1 << 12}).t()).item<double>(), double(0.1f), 5e-7);
  auto cols = sum(x.reshape({1 << 20, 16}), {0}).to_vector<double>();  // the column path
  EXPECT_NEAR(cols[3], want / 16, want / 16 * 1e-5);
}

TEST(ReduceLarge, ArgmaxAndMaxAlongEitherDim) {
  manual_seed(2);
  Tensor x = randn({300, 1000});
  Grid g = grid(x);
  auto [v1, i1] = max(x, 1);
  auto a0 = values(argmin(x, 0));
  auto vi1 = values(i1), vv1 = values(v1);
  for (int64_t r = 0; r < 300; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < 1000; ++c)
      if (g.at(r, c) > g.at(r, best)) best = c;
    EXPECT_EQ(vi1[size_t(r)], best);
    EXPECT_EQ(vv1[size_t(r)], g.at(r, best));
  }
  for (int64_t c = 0; c < 1000; ++c) {
    int64_t best = 0;
    for (int64_t r = 1; r < 300; ++r)
      if (g.at(r, c) < g.at(best, c)) best = r;
    EXPECT_EQ(a0[size_t(c)], best);
  }
  // Flattened: a planted maximum, then a NaN that beats it.
  Tensor flat = randn({1 << 20});
  flat.narrow(0, 777777, 1).fill_(100.0);
  EXPECT_EQ(argmax(flat).item<int64_t>(), 777777);
  EXPECT_EQ(max(flat).item<double>(), 100.0);
  flat.narrow(0, 123, 1).fill_(NAN);
  EXPECT_EQ(argmax(flat).item<int64_t>(), 123);
  EXPECT_EQ(argmin(flat).item<int64_t>(), 123);
  EXPECT_TRUE(std::isnan(amax(flat).item<double>()));
}

TEST(ReduceLarge, VarianceIsStable) {
  manual_seed(3);
  Tensor x = randn({64, 5000}, {kF64}) * 3 + 1e6;  // a large mean punishes sum-of-squares
  Grid g = grid(x);
  auto v = values(var(x, {1}));
  auto s = values(ember::std(x, {1}, 0));
  for (int64_t r = 0; r < 64; ++r) {
    double mean = 0, m2 = 0;
    for (int64_t c = 0; c < g.cols; ++c) mean += g.at(r, c) / double(g.cols);
    for (int64_t c = 0; c < g.cols; ++c) m2 += (g.at(r, c) - mean) * (g.at(r, c) - mean);
    EXPECT_NEAR(v[size_t(r)], m2 / double(g.cols - 1), 1e-6 * m2 / double(g.cols));
    EXPECT_NEAR(s[size_t(r)], std::sqrt(m2 / double(g.cols)), 1e-6);
  }
  // One output over every element: blocks reduced on several threads, merged pairwise.
  Tensor f = randn({1 << 20}) * 2 + 1000;
  auto fv = values(f);
  double mean = std::accumulate(fv.begin(), fv.end(), 0.0) / double(fv.size()), m2 = 0;
  for (double e : fv) m2 += (e - mean) * (e - mean);
  EXPECT_NEAR(var(f).item<double>(), m2 / double(fv.size() - 1), 1e-4);
}

TEST(ReduceLarge, LogsumexpAndNorms) {
  manual_seed(4);
  Tensor x = randn({3, 100000}) * 50;  // exp overflows float without the running max
  Grid g = grid(x);
  auto l = values(logsumexp(x, {1}));
  for (int64_t r = 0; r < 3; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < g.cols; ++c) m = std::max(m, g.at(r, c));
    for (int64_t c = 0; c < g.cols; ++c) s += std::exp(g.at(r, c) - m);
    EXPECT_NEAR(l[size_t(r)], m + std::log(s), 1e-3);
  }
  Tensor y = randn({1 << 20});
  auto v = values(y);
  double l1 = 0, l2 = 0, l3 = 0, linf = 0;
  for (double e : v) {
    l1 += std::fabs(e);
    l2 += e * e;
    l3 += std::pow(std::fabs(e), 3);
    linf = std::max(linf, std::fabs(e));
  }
  EXPECT_NEAR(norm(y, 1).item<double>(), l1, l1 * 1e-5);
  EXPECT_NEAR(norm(y).item<double>(), std::sqrt(l2), 1e-3);
  EXPECT_NEAR(norm(y, 3).item<double>(), std::cbrt(l3), 1e-3);
  EXPECT_EQ(norm(y, INFINITY).item<double>(), linf);
  EXPECT_EQ(count_nonzero(relu(y)).item<int64_t>(),
            int64_t(std::count_if(v.begin(), v.end(), [](double e) { return e > 0; })));
}

TEST(ScanLarge, CumsumMatchesASerialDoubleScan) {
  manual_seed(5);
  Tensor x = randn({300, 700});
  Grid g = grid(x);
  auto along1 = values(cumsum(x, 1));
  auto along0 = values(cumsum(x, 0));
  for (int64_t r = 0; r < 300; ++r) {
    double acc = 0;
    for (int64_t c = 0; c < 700; ++c) {
      acc += g.at(r, c);
      // f32 scans accumulate in double and round each output, like torch's CPU kernel.
      ASSERT_EQ(along1[size_t(r * 700 + c)], double(float(acc)));
    }
  }
  for (int64_t c = 0; c < 700; ++c) {
    double acc = 0;
    for (int64_t r = 0; r < 300; ++r) {
      acc += g.at(r, c);
      ASSERT_EQ(along0[size_t(r * 700 + c)], double(float(acc)));
    }
  }
  auto [mx, at] = cummax(x.t(), 1);  // non-contiguous input, long rows
  auto mv = values(mx), av = values(at);
  for (int64_t c = 0; c < 700; ++c) {
    double best = -INFINITY;
    int64_t bi = 0;
    for (int64_t r = 0; r < 300; ++r) {
      if (g.at(r, c) >= best) {
        best = g.at(r, c);
        bi = r;
      }
      ASSERT_EQ(mv[size_t(c * 300 + r)], best);
      ASSERT_EQ(av[size_t(c * 300 + r)], bi);
    }
  }
}

TEST(SortLarge, StableSortMatchesStdStableSort) {
  manual_seed(6);
  Tensor x = round(randn({100000}) * 10);  // many ties: stability shows in the indices
  auto v = values(x);
  std::vector<int64_t> want(v.size());
  std::iota(want.begin(), want.end(), 0);
  std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  auto [sv, si] = sort(x, 0, /*descending=*/true);
  EXPECT_EQ(si.to_vector<int64_t>(), want);
  auto got = values(sv);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], v[size_t(want[i])]);
  // Along dim 0 of a matrix (lanes strided in memory).
  Tensor m = round(randn({500, 40}) * 3);
  Grid g = grid(m);
  auto idx = argsort(m, 0).to_vector<int64_t>();
  for (int64_t c = 0; c < 40; ++c) {
    std::vector<int64_t> w(500);
    std::iota(w.begin(), w.end(), 0);
    std::stable_sort(w.begin(), w.end(),
                     [&](int64_t a, int64_t b) { return g.at(a, c) < g.at(b, c); });
    for (int64_t r = 0; r < 500; ++r) ASSERT_EQ(idx[size_t(r * 40 + c)], w[size_t(r)]);
  }
}

TEST(SortLarge, LongLanesSortStablyInEveryDType) {
  // Long lanes take the radix path: check it against std::stable_sort for every dtype, with
  // ties, signed zeros, infinities and NaNs (NaN last ascending, first descending).
  manual_seed(9);
  Tensor base = round(randn({3000}) * 40);
  base.narrow(0, 10, 5).fill_(NAN);
  base.narrow(0, 100, 5).fill_(-0.0);
  base.narrow(0, 200, 3).fill_(INFINITY);
  base.narrow(0, 300, 3).fill_(-INFINITY);
  for (DType d : {kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64}) {
    Tensor x = is_floating(d) ? base.to(d) : nan_to_num(base, 0, 100, -100).to(d);
    if (d == kU8) x = nan_to_num(abs(base), 0, 100, 100).to(d);
    auto v = values(x);
    for (bool desc : {false, true}) {
      std::vector<int64_t> want(v.size());
      std::iota(want.begin(), want.end(), 0);
      auto before = [&](int64_t a, int64_t b) {  // strict "a sorts before b"
        const double p = v[size_t(a)], q = v[size_t(b)];
        if (desc) return !std::isnan(q) && (std::isnan(p) || p > q);
        return !std::isnan(p) && (std::isnan(q) || p < q);
      };
      std::stable_sort(want.begin(), want.end(), before);
      EXPECT_EQ(argsort(x.reshape({1, 3000}), 1, desc).to_vector<int64_t>(), want)
          << dtype_name(d) << (desc ? " descending" : " ascending");
    }
  }
}

TEST(SortLarge, OrderStatisticsOfAPermutation) {
  manual_seed(7);
  const int64_t n = 100001;
  Tensor perm = argsort(rand({n}));  // a permutation of 0..n-1
  Tensor x = perm.to(kF32);
  auto [tv, ti] = topk(x, 5);
  EXPECT_EQ(values(tv), (std::vector<double>{100000, 99999, 99998, 99997, 99996}));
  auto p = perm.to_vector<int64_t>();
  auto tiv = ti.to_vector<int64_t>();
  for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(p[size_t(tiv[size_t(j)])], n - 1 - j);
  auto [kv, ki] = kthvalue(x, 500);
  EXPECT_EQ(kv.item<double>(), 499);
  EXPECT_EQ(p[size_t(ki.item<int64_t>())], 499);
  EXPECT_EQ(median(x).item<double>(), 50000);
  auto [md, mi] = median(x.reshape({1, n}), 1);
  EXPECT_EQ(values(md), std::vector<double>{50000});
  EXPECT_EQ(p[size_t(mi.item<int64_t>())], 50000);
  // An even count takes the lower of the two middle values.
  std::vector<int64_t> head(p.begin(), p.end() - 1);
  std::nth_element(head.begin(), head.begin() + (n - 2) / 2, head.end());
  EXPECT_EQ(median(x.narrow(0, 0, n - 1)).item<double>(), double(head[size_t((n - 2) / 2)]));
}

TEST(SortLarge, TopkAgreesWithSortOnBothPaths) {
  manual_seed(8);
  // Ties and NaNs: topk's heap (small k) and selection (large k) paths must both pick what a
  // stable sort puts first.
  Tensor x = round(randn({3, 2000}) * 4);
  x.narrow(1, 17, 3).fill_(NAN);
  for (bool largest : {true, false}) {
    auto [sv, si] = sort(x, 1, largest);
    for (int64_t k : {1, 5, 64, 200, 2000}) {
      auto [tv, ti] = topk(x, k, 1, largest);
      EXPECT_EQ(ti.to_vector<int64_t>(), si.narrow(1, 0, k).contiguous().to_vector<int64_t>())
          << "k=" << k << " largest=" << largest;
      auto a = values(tv), b = values(sv.narrow(1, 0, k).contiguous());
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_TRUE(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])));
      // The same along dim 0 of the transpose: lanes strided in memory.
      auto [tv0, ti0] = topk(x.t(), k, 0, largest);
      EXPECT_EQ(ti0.to_vector<int64_t>(), ti.t().contiguous().to_vector<int64_t>());
    }
  }
}

TEST(Reduce, ResultDTypesFollowTorch) {
  Tensor i8 = ones({2, 3}, {kI8});
  EXPECT_EQ(sum(i8).dtype(), kI64);
  EXPECT_EQ(prod(ones({2}, {kBool})).dtype(), kI64);
  EXPECT_EQ(cumsum(ones({3}, {kBool}), 0).dtype(), kI64);
  EXPECT_EQ(cumprod(i8, 1, kF32).dtype(), kF32);
  EXPECT_EQ(argmax(i8).dtype(), kI64);
  EXPECT_EQ(count_nonzero(i8).dtype(), kI64);
  EXPECT_EQ(any(ones({2}, {kU8})).dtype(), kU8);
  EXPECT_EQ(all(i8).dtype(), kBool);
  EXPECT_EQ(logsumexp(i8, {1}).dtype(), kF32);
  EXPECT_EQ(std::get<1>(sort(i8)).dtype(), kI64);
  EXPECT_EQ(max(i8).shape(), Shape{});
  EXPECT_EQ(argmax(i8, std::nullopt, true).shape(), Shape({1, 1}));
  EXPECT_THROW(var(i8), DTypeError);
  EXPECT_THROW(norm(i8), DTypeError);
  EXPECT_THROW(mean(i8), DTypeError);
  EXPECT_THROW(argmax(ones({2}, {kBool})), DTypeError);
}

TEST(Reduce, ErrorsNameTheOpAndTheProblem) {
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("nothing thrown");
  };
  std::string m = message([] { max(zeros({0, 3}), 0); });
  EXPECT_NE(m.find("[max]"), std::string::npos) << m;
  EXPECT_NE(m.find("non-zero size"), std::string::npos) << m;
  m = message([] { topk(zeros({3}), 4); });
  EXPECT_NE(m.find("[topk]"), std::string::npos) << m;
  EXPECT_NE(m.find("[0, 3]"), std::string::npos) << m;
  m = message([] { kthvalue(zeros({3}), 0); });
  EXPECT_NE(m.find("[kthvalue]"), std::string::npos) << m;
  m = message([] { cumsum(zeros({2, 3}), 2); });
  EXPECT_NE(m.find("[cumsum]"), std::string::npos) << m;
  EXPECT_NE(m.find("out of range"), std::string::npos) << m;
  m = message([] { argmax(zeros({0})); });
  EXPECT_NE(m.find("[argmax]"), std::string::npos) << m;
  EXPECT_THROW(max(zeros({0})), IndexError);
  EXPECT_THROW(median(zeros({2, 0}), 1), IndexError);
}

}  // namespace
}  // namespace ember

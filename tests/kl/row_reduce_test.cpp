// The row-reduce template against flex's reductions, softmax and norms: Row mode (vectors
// along the row), Col mode (vectors across rows) and strided rows, many shapes and dtypes.
#include <gtest/gtest.h>

#include "ember/kl/trace_op.h"
#include "harness.h"

namespace ember::kl::test {
namespace {

using C = Combiner;
namespace F = ember::nn::functional;

std::vector<Expr> identity_pro(std::span<const Expr> in, std::span<const Expr>) { return {in[0]}; }
RowEpilogue pass_first(int n = 1) {
  return [n](std::span<const Expr> r, std::span<const Expr>, std::span<const Expr>) {
    return std::vector<Expr>(r.begin(), r.begin() + n);
  };
}

struct Case {
  Shape shape;
  Shape dims;
  bool transpose = false;  // the input is a transposed (non-contiguous) view
};
std::vector<Case> cases() {
  return {{{7, 33}, {1}},     {{3, 1000}, {1}},      {{1, 5}, {1}},       {{33, 19}, {0}},
          {{4, 100, 9}, {1}}, {{5, 6, 7}, {1}},      {{2, 3, 40}, {2}},   {{6, 16}, {0, 1}},
          {{17, 8}, {1}, true}, {{9, 24}, {0}, true}, {{12, 2, 8}, {0}}};
}
Tensor make_input(const Case& c, DType d) {
  if (!c.transpose) return randn(c.shape).to(d);
  Shape s = c.shape;
  std::swap(s[0], s[1]);
  return randn(s).to(d).t();
}
double row_len(const Case& c) {
  double n = 1;
  for (int64_t d : c.dims) n *= double(c.shape[size_t(d)]);
  return n;
}

// Checks run after the batch has compiled and run every kernel of a test.
struct Checks {
  Batch batch;
  std::vector<std::function<void()>> checks;
  void add(std::function<void()> f) { checks.push_back(std::move(f)); }
  ~Checks() {
    batch.run();
    for (auto& f : checks) f();
  }
};

TEST(KlRowReduce, SumMatchesFlexAcrossModesAndDtypes) {
  manual_seed(11);
  std::set<std::string> modes;
  {
  Checks t;
  for (const Case& c : cases()) {
    for (DType d : {kF32, kF64, kF16, kI32, kBool}) {
      Tensor x = d == kI32 ? randint(-1000, 1000, c.transpose ? Shape{c.shape[1], c.shape[0]} : c.shape).to(kI32)
                 : d == kBool ? (randn(c.shape) > 0) : make_input(c, d);
      if (d == kI32 && c.transpose) x = x.t();
      const DType acc = is_floating(d) ? (d == kF64 ? kF64 : kF32) : kI64;
      const DType out = is_floating(d) ? d : kI64;
      auto r = row_reduce_job(t.batch, {x}, c.shape, c.dims, 1, {{C::Sum, acc}}, {out}, false, identity_pro, pass_first());
      modes.insert(r->key.substr(0, r->key.find(" in[")));
      Tensor want = sum(x, c.dims, true);
      const double tol = d == kF16 ? 2e-3 : 2e-6, atol = tol * row_len(c);
      t.add([=] {
        if (is_floating(d)) EXPECT_EQ(diff_close(r->outputs[0], want, tol, atol), "") << r->key;
        else EXPECT_EQ(diff_exact(r->outputs[0], want), "") << r->key;
      });
    }
  }
  }
  // Row vectors, Col vectors and the scalar walk were all exercised.
  EXPECT_GE(modes.size(), 3u) << ::testing::PrintToString(modes);
}

TEST(KlRowReduce, ExtremesAndTheirIndicesAreExact) {
  manual_seed(12);
  Checks t;
  for (const Case& c : cases()) {
    for (DType d : {kF32, kF64, kI32, kBF16}) {
      Tensor x = d == kI32 ? randint(-5, 5, c.shape).to(kI32) : make_input(c, d);  // ties for ints
      if (is_floating(d) && x.numel() > 20) {  // a NaN in some rows
        Tensor flat = x.contiguous().reshape({-1});
        flat = where(remainder(arange(flat.numel()), 17) == 3, full({1}, NAN, {.dtype = d}), flat);
        x = flat.reshape(c.shape);
      }
      const DType acc = d == kBF16 ? kF32 : d;
      auto mx = row_reduce_job(t.batch, {x}, c.shape, c.dims, 1, {{C::Max, acc}, {C::Min, acc}}, {d, d}, false,
                               [](std::span<const Expr> in, std::span<const Expr>) {
                                 return std::vector<Expr>{in[0], in[0]};
                               }, pass_first(2));
      t.add([=] { EXPECT_EQ(diff_exact(mx->outputs[0], amax(x, c.dims, true)), "") << mx->key; });
      t.add([=] { EXPECT_EQ(diff_exact(mx->outputs[1], amin(x, c.dims, true)), "") << mx->key; });
      if (c.dims.size() != 1) continue;
      auto arg = row_reduce_job(t.batch, {x}, c.shape, c.dims, 1, {{C::ArgMax, acc}, {C::ArgMin, acc}}, {kI64, kI64}, false,
                                [](std::span<const Expr> in, std::span<const Expr>) {
                                  return std::vector<Expr>{in[0], in[0]};
                                },
                                [](std::span<const Expr> r, std::span<const Expr>, std::span<const Expr>) {
                                  return std::vector<Expr>{r[1], r[3]};
                                });
      t.add([=] { EXPECT_EQ(diff_exact(arg->outputs[0], argmax(x, c.dims[0], true)), "") << arg->key; });
      t.add([=] { EXPECT_EQ(diff_exact(arg->outputs[1], argmin(x, c.dims[0], true)), "") << arg->key; });
    }
  }
}

TEST(KlRowReduce, WelfordVarianceAndAnyAll) {
  manual_seed(13);
  Checks t;
  for (const Case& c : cases()) {
    Tensor x = make_input(c, kF32) * 3 + 5;
    auto r = row_reduce_job(t.batch, {x}, c.shape, c.dims, 1, {{C::Welford, kF32}}, {kF32, kF32}, false, identity_pro,
                            [](std::span<const Expr> red, std::span<const Expr>, std::span<const Expr>) {
                              // mean, unbiased variance M2 / (n - 1)
                              return std::vector<Expr>{red[0], red[1] / (red[2] - Expr(1))};
                            });
    t.add([=] { EXPECT_EQ(diff_close(r->outputs[0], mean(x, c.dims, true), 1e-5, 1e-5), "") << r->key; });
    t.add([=] { EXPECT_EQ(diff_close(r->outputs[1], var(x, c.dims, 1, true), 1e-4, 1e-5), "") << r->key; });
    Tensor b = randn(c.shape) > 1.5;
    auto ab = row_reduce_job(t.batch, {b}, c.shape, c.dims, 1, {{C::Any, kBool}, {C::All, kBool}}, {kBool, kBool}, false,
                             [](std::span<const Expr> in, std::span<const Expr>) {
                               return std::vector<Expr>{in[0], !in[0]};
                             }, pass_first(2));
    t.add([=] { EXPECT_EQ(diff_exact(ab->outputs[0], any(b, c.dims, true)), "") << ab->key; });
    t.add([=] { EXPECT_EQ(diff_exact(ab->outputs[1], all(logical_not(b), c.dims, true)), "") << ab->key; });
  }
}

// softmax, log_softmax (broadcast back) and logsumexp (reduced) from the online-softmax pair.
TEST(KlRowReduce, SoftmaxFamilyMatchesFlex) {
  manual_seed(14);
  Checks t;
  for (const Case& c : cases()) {
    if (c.dims.size() != 1) continue;
    const int64_t dim = c.dims[0];
    for (DType d : {kF32, kF64, kF16}) {
      Tensor x = make_input(c, d) * 4;
      const DType acc = d == kF64 ? kF64 : kF32;
      auto sm = row_reduce_job(t.batch, {x}, c.shape, c.dims, 1, {{C::Softmax, acc}}, {d, d}, true, identity_pro,
                               [acc](std::span<const Expr> r, std::span<const Expr> in, std::span<const Expr>) {
                                 Expr z = cast(in[0], acc) - r[0];
                                 return std::vector<Expr>{exp(z) / r[1], z - log(r[1])};
                               });
      const double tol = d == kF16 ? 2e-3 : d == kF32 ? 2e-6 : 1e-12;
      t.add([=] { EXPECT_EQ(diff_close(sm->outputs[0], F::softmax(x, dim), tol, tol), "") << sm->key; });
      t.add([=] { EXPECT_EQ(diff_close(sm->outputs[1], F::log_softmax(x, dim), tol, tol * 10), "") << sm->key; });
      auto lse = row_reduce_job(t.batch, {x}, c.shape, c.dims, 1, {{C::Softmax, acc}}, {d}, false, identity_pro,
                                [](std::span<const Expr> r, std::span<const Expr>, std::span<const Expr>) {
                                  return std::vector<Expr>{r[0] + log(r[1])};
                                });
      t.add([=] { EXPECT_EQ(diff_close(lse->outputs[0], logsumexp(x, c.dims, true), tol, tol), "") << lse->key; });
    }
  }
  // Rows of -inf and a row with +inf behave like torch: NaN where torch gives NaN.
  Tensor x = tensor(std::vector<float>{-INFINITY, -INFINITY, -INFINITY, 1.0f, 2.0f, -INFINITY}, {2, 3});
  auto sm = row_reduce_job(t.batch, {x}, {2, 3}, {1}, 1, {{C::Softmax, kF32}}, {kF32}, true, identity_pro,
                           [](std::span<const Expr> r, std::span<const Expr> in, std::span<const Expr>) {
                             return std::vector<Expr>{exp(in[0] - r[0]) / r[1]};
                           });
  t.add([=] { EXPECT_EQ(diff_close(sm->outputs[0], F::softmax(x, 1), 1e-6, 1e-7), ""); });
}

// layer_norm and RMS norm: x is reduced, weight and bias (broadcast over rows) are read in the
// epilogue only; eps is a scalar parameter.
TEST(KlRowReduce, LayerNormAndRmsNormMatchFlex) {
  manual_seed(15);
  Checks t;
  for (Shape shape : {Shape{4, 7, 32}, Shape{3, 257}, Shape{64, 5}, Shape{2, 8}}) {
    const int64_t n = shape.back();
    Tensor x = randn(shape) * 2 + 1, w = randn({n}), b = randn({n});
    const Shape dims{int64_t(shape.size()) - 1};
    auto ln = row_reduce_job(t.batch, {x, w, b}, shape, dims, 1, {{C::Welford, kF32}}, {kF32}, true, identity_pro,
                             [](std::span<const Expr> r, std::span<const Expr> in, std::span<const Expr> s) {
                               Expr var = r[1] / r[2];
                               return std::vector<Expr>{(in[0] - r[0]) * rsqrt(var + s[0]) * in[1] + in[2]};
                             }, {1e-5}, {kF32});
    t.add([=] { EXPECT_EQ(diff_close(ln->outputs[0], F::layer_norm(x, {n}, w, b, 1e-5), 1e-5, 1e-5), "") << ln->key; });
    auto rms = row_reduce_job(t.batch, {x, w}, shape, dims, 1, {{C::Sum, kF32}}, {kF32}, true,
                              [](std::span<const Expr> in, std::span<const Expr>) {
                                return std::vector<Expr>{in[0] * in[0]};
                              },
                              [n](std::span<const Expr> r, std::span<const Expr> in, std::span<const Expr> s) {
                                return std::vector<Expr>{in[0] * rsqrt(r[0] / Expr(double(n)) + s[0]) * in[1]};
                              }, {1e-6}, {kF32});
    t.add([=] { EXPECT_EQ(diff_close(rms->outputs[0], F::rms_norm(x, {n}, w, 1e-6), 1e-5, 1e-5), "") << rms->key; });
  }
}

TEST(KlRowReduce, RangesSplitAnywhere) {
  manual_seed(16);
  Checks t;
  Tensor x = randn({37, 29});
  for (const Shape& dims : {Shape{0}, Shape{1}}) {
    Tensor want = sum(x, dims, true);
    for (int64_t piece : {1, 2, 5}) {
      auto r = row_reduce_job(t.batch, {x}, {37, 29}, dims, 1, {{C::Sum, kF32}}, {kF32}, false, identity_pro, pass_first(),
                              {}, {}, piece);
      t.add([=] { EXPECT_EQ(diff_close(r->outputs[0], want, 1e-5, 1e-4), "") << r->key << " piece " << piece; });
    }
  }
}

}  // namespace
}  // namespace ember::kl::test

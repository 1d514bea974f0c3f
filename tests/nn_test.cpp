// nn functional behaviour that golden cases do not express: the decompositions (what backends
// without a fused kernel run) against the goldens and against the flex kernels on larger and
// f16 inputs, dropout under manual_seed, in-place running statistics, the fast exp, messages.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/backends/backend.h"
#include "ember/backends/flex/rowwise.h"
#include "golden.h"
#include "kernel_off.h"

namespace ember {
namespace {

namespace F = nn::functional;

using test::KernelOff;

const OpId kFused[] = {OpId::softmax, OpId::log_softmax, OpId::layer_norm,
                       OpId::rms_norm, OpId::group_norm,  OpId::batch_norm};

TEST(NnDecompositions, MatchGoldens) {
  for (OpId op : kFused) {
    KernelOff off(op);
    int n = 0;
    for (const test::Case& c : test::all_cases()) {
      if (c.op != op_name(op) || !c.error.empty()) continue;
      SCOPED_TRACE(c.name);
      TensorList got = test::runners().at(c.op)(c, Device::flex());
      ASSERT_EQ(got.size(), c.outputs.size());
      for (size_t i = 0; i < got.size(); ++i)
        if (!c.outputs[i].is_null())
          EXPECT_EQ(test::compare(got[i], c.outputs[i], c.rtol, c.atol), "") << "output " << i;
      ++n;
    }
    EXPECT_GT(n, 5) << op_name(op);
  }
}

// Runs f with the kernel and with the decomposition and compares the results.
template <class Fn>
void expect_kernel_matches_decomposition(OpId op, const Fn& f, double tol) {
  TensorList fused = f();
  TensorList dec;
  {
    KernelOff off(op);
    dec = f();
  }
  ASSERT_EQ(fused.size(), dec.size());
  for (size_t i = 0; i < fused.size(); ++i) {
    EXPECT_EQ(fused[i].dtype(), dec[i].dtype());
    EXPECT_TRUE(allclose(fused[i].to(kF64), dec[i].to(kF64), tol, tol))
        << op_name(op) << " output " << i;
  }
}

TEST(NnDecompositions, MatchKernelsOnLargerInputs) {
  manual_seed(3);
  for (DType dt : {kF32, kF16, kBF16, kF64}) {
    const double tol = dt == kF32 || dt == kF64 ? 1e-5 : 2e-2;
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor rows = (randn({67, 1031}) * 4).to(dt);       // parallel rows with lane tails
    Tensor cols = (randn({3, 37, 300}) * 4).to(dt);     // softmax over an inner dim > one block
    Tensor img = randn({4, 6, 9, 7}).to(dt);
    Tensor w = rand({1031}).to(dt), b = randn({1031}).to(dt), wc = rand({6}).to(dt);
    expect_kernel_matches_decomposition(
        OpId::softmax, [&] { return TensorList{F::softmax(rows, 1)}; }, tol);
    expect_kernel_matches_decomposition(
        OpId::softmax, [&] { return TensorList{F::softmax(cols, 1)}; }, tol);
    expect_kernel_matches_decomposition(
        OpId::log_softmax, [&] { return TensorList{F::log_softmax(cols, 1)}; }, tol);
    expect_kernel_matches_decomposition(
        OpId::log_softmax, [&] { return TensorList{F::log_softmax(rows, -1)}; }, tol);
    expect_kernel_matches_decomposition(
        OpId::layer_norm, [&] { return TensorList{F::layer_norm(rows, {1031}, w, b)}; }, tol);
    expect_kernel_matches_decomposition(
        OpId::rms_norm, [&] { return TensorList{F::rms_norm(rows, {1031}, w)}; }, tol);
    expect_kernel_matches_decomposition(
        OpId::group_norm, [&] { return TensorList{F::group_norm(img, 3, wc, wc)}; }, tol);
    expect_kernel_matches_decomposition(OpId::batch_norm, [&] {
      Tensor rm = zeros({6}, {dt}), rv = ones({6}, {dt});
      Tensor y = F::batch_norm(img, rm, rv, wc, wc, true, 0.1, 1e-5);
      return TensorList{y, rm, rv};
    }, tol);
  }
}

TEST(NnDropout, ReproducibleUnderManualSeed) {
  Tensor x = randn({64, 33});
  manual_seed(42);
  Tensor a = F::dropout(x, 0.4);
  manual_seed(42);
  Tensor b = F::dropout(x, 0.4);
  Tensor c = F::dropout(x, 0.4);
  EXPECT_TRUE(equal(a, b));
  EXPECT_FALSE(equal(a, c));
  // Every element is dropped or scaled by 1 / (1 - p).
  auto xv = x.to_vector<float>(), av = a.to_vector<float>();
  int dropped = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (av[i] == 0) ++dropped;
    else EXPECT_NEAR(av[i], xv[i] / 0.6f, 1e-5f);
  }
  EXPECT_NEAR(double(dropped) / double(xv.size()), 0.4, 0.05);
}

TEST(NnDropout, IdentityCases) {
  Tensor x = randn({5, 3});
  EXPECT_TRUE(F::dropout(x, 0.5, false).is_alias_of(x));  // eval returns the input itself
  EXPECT_TRUE(equal(F::dropout(x, 0.0), x));
  EXPECT_TRUE(equal(F::dropout(x, 1.0), zeros({5, 3})));
}

TEST(NnBatchNorm, UpdatesRunningStatisticsInPlace) {
  Tensor x = randn({8, 3, 4});
  Tensor buf = zeros({2, 3});
  Tensor rm = buf.select(0, 0), rv = buf.select(0, 1).fill_(1);  // views of one buffer
  uint64_t v0 = rm.version();
  F::batch_norm(x, rm, rv, {}, {}, true, 0.25);
  EXPECT_GT(rm.version(), v0);
  Tensor mean = x.mean({0, 2});
  Tensor d = x - mean.reshape({1, 3, 1});
  Tensor var = (d * d).sum({0, 2}) / 31.0;
  EXPECT_TRUE(allclose(buf.select(0, 0), mean * 0.25, 1e-5, 1e-6));
  EXPECT_TRUE(allclose(buf.select(0, 1), var * 0.25 + 0.75, 1e-5, 1e-6));
  // Evaluation leaves them alone.
  Tensor before = buf.clone();
  F::batch_norm(x, rm, rv, {}, {}, false);
  EXPECT_TRUE(equal(buf, before));
}

TEST(NnFlex, FastExpIsAccurate) {
  double worst = 0;
  for (float v = -87.0f; v < 88.0f; v += 0.0137f) {
    const double e = std::exp(double(v));
    worst = std::max(worst, std::fabs(double(flex::exp_fast(v)) - e) / e);
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(flex::exp_fast(-INFINITY), 0.0f);
  EXPECT_EQ(flex::exp_fast(-100.0f), 0.0f);
  EXPECT_EQ(flex::exp_fast(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(flex::exp_fast(NAN)));
}

TEST(NnErrors, MessagesNameTheBadValue) {
  try {
    F::embedding(tensor<int64_t>({0, 7}), randn({5, 2}));
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index 7"), std::string::npos) << e.what();
  }
  try {
    F::nll_loss(randn({2, 3}), tensor<int64_t>({0, 3}));
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("target 3"), std::string::npos) << e.what();
  }
  try {
    F::cross_entropy(randn({2, 3}), tensor<int64_t>({4, 1}));
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[cross_entropy] target 4", 0), 0u) << e.what();
  }
  EXPECT_THROW(F::cross_entropy(randn({2, 3}), tensor<int64_t>({0, 1}), {.reduction = "avg"}),
               ValueError);
  EXPECT_THROW(F::max_pool2d(randn({1, 1, 4, 4}), {.kernel_size = {2}, .padding = {3}}),
               ValueError);
}

}  // namespace
}  // namespace ember

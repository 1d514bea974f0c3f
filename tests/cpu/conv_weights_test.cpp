// The cpu backend's cache of convolution weights in oneDNN's layouts (dnnl_weights.cpp): only
// frozen storages are kept; a write that bumps the version, or weights freed and their memory
// reused, never hits a stale copy; the batch-1 channel split (grouped convolutions included)
// against flex's result.
#include "cpu_test_util.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/tensor_impl.h"

namespace ember::test {
namespace {

namespace F = nn::functional;

class DnnlWeightCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::dnnl_available()) GTEST_SKIP() << "built without oneDNN";
    threads_ = flex::num_threads();
  }
  void TearDown() override {
    flex::set_num_threads(threads_);
    cpu::set_dnnl_weight_cache_bytes(int64_t(512) << 20);
  }
  static Tensor c(const Tensor& t) { return t.to(Device::cpu().eager()); }
  static Tensor frozen(const Tensor& t) {
    Tensor r = c(t);
    ember::detail::freeze(r);
    return r;
  }
  // The cpu conv of x with w (on cpu) against flex's with the same values.
  static std::string check(const Tensor& x, const Tensor& w, const Tensor& b,
                           const F::ConvOptions& o = {.padding = {1}}) {
    const Tensor want = F::conv2d(x, w.to(Device::flex()), b, o);
    return mismatch(F::conv2d(c(x), w, c(b), o), want, 1e-4, 1e-4);
  }
  int threads_ = 1;
};

TEST_F(DnnlWeightCache, FrozenWeightsAreReorderedOnce) {
  const Tensor x = rnd({2, 16, 12, 12}), b = rnd({32});
  const Tensor w = frozen(rnd({32, 16, 3, 3}));
  const cpu::WeightCacheStats s0 = cpu::dnnl_weight_cache_stats();
  EXPECT_EQ(check(x, w, b), "");
  const cpu::WeightCacheStats s1 = cpu::dnnl_weight_cache_stats();
  EXPECT_EQ(s1.misses, s0.misses + 1);
  EXPECT_EQ(check(x, w, b), "");
  EXPECT_EQ(check(x, w, b), "");
  const cpu::WeightCacheStats s2 = cpu::dnnl_weight_cache_stats();
  EXPECT_EQ(s2.misses, s1.misses);
  EXPECT_EQ(s2.hits, s1.hits + 2);
  // Weights that are not frozen (a module's parameters) are reordered on every call.
  const Tensor p = c(rnd({32, 16, 3, 3}));
  EXPECT_EQ(check(x, p, b), "");
  EXPECT_EQ(check(x, p, b), "");
  const cpu::WeightCacheStats s3 = cpu::dnnl_weight_cache_stats();
  EXPECT_EQ(s3.hits, s2.hits);
  EXPECT_EQ(s3.misses, s2.misses);
}

TEST_F(DnnlWeightCache, InPlaceWritesAreSeen) {
  const Tensor x = rnd({1, 8, 10, 10}), b = rnd({16});
  Tensor w = frozen(rnd({16, 8, 3, 3}));
  EXPECT_EQ(check(x, w, b), "");
  const Tensor before = F::conv2d(c(x), w, c(b), {.padding = {1}}).to(Device::flex());
  // Every kind of in-place write: copy_, compound assignment, a method, fill_, a view's write.
  w.copy_(c(rnd({16, 8, 3, 3})));
  EXPECT_EQ(check(x, w, b), "");
  EXPECT_NE(mismatch(F::conv2d(c(x), w, c(b), {.padding = {1}}), before, 1e-4, 1e-4), "");
  w *= 2.0;
  EXPECT_EQ(check(x, w, b), "");
  w.add_(c(rnd({16, 8, 3, 3})));
  EXPECT_EQ(check(x, w, b), "");
  Tensor(w[3]).fill_(0.25);
  EXPECT_EQ(check(x, w, b), "");
  w.fill_(-1.0);
  EXPECT_EQ(check(x, w, b), "");
}

TEST_F(DnnlWeightCache, AQueuedWriteIsSeenByTheCallsAfterIt) {
  // On the lazy device copy_ bumps the version when it is recorded and writes when the queue
  // runs; a convolution queued before it runs first (with the old weights) and must not keep
  // them under the new version for the one queued after it.
  const Device lazy = Device::cpu();
  const Tensor xf = rnd({1, 8, 10, 10}), bf = rnd({16});
  const Tensor w1 = rnd({16, 8, 3, 3}), w2 = rnd({16, 8, 3, 3});
  Tensor w = w1.to(lazy);
  ember::detail::freeze(w);
  const Tensor x = xf.to(lazy), b = bf.to(lazy), w2l = w2.to(lazy);
  (void)F::conv2d(x, w, b, {.padding = {1}});
  synchronize(lazy);
  Tensor y1 = F::conv2d(x, w, b, {.padding = {1}});
  w.copy_(w2l);
  Tensor y2 = F::conv2d(x, w, b, {.padding = {1}});
  synchronize(lazy);
  EXPECT_EQ(mismatch(y1, F::conv2d(xf, w1, bf, {.padding = {1}}), 1e-4, 1e-4), "");
  EXPECT_EQ(mismatch(y2, F::conv2d(xf, w2, bf, {.padding = {1}}), 1e-4, 1e-4), "");
  // Once the queue has run the weights are kept again, at their new version.
  const int64_t hits = cpu::dnnl_weight_cache_stats().hits;
  EXPECT_EQ(check(xf, w, bf), "");
  EXPECT_EQ(check(xf, w, bf), "");
  EXPECT_GT(cpu::dnnl_weight_cache_stats().hits, hits);
}

TEST_F(DnnlWeightCache, FreedWeightsNeverHitWhenTheirMemoryIsReused) {
  const Tensor x = rnd({1, 8, 10, 10}), b = rnd({16});
  // Same shape each time: the allocators hand the same blocks back, so a cache keyed on
  // addresses alone would return the previous weights.
  for (int i = 0; i < 6; ++i) {
    SCOPED_TRACE(i);
    const Tensor w = frozen(full({16, 8, 3, 3}, 0.1 * (i + 1)));
    EXPECT_EQ(check(x, w, b), "");
  }
  // The entries of freed weights go at the next insertion.
  {
    const Tensor w = frozen(rnd({16, 8, 3, 3}));
    EXPECT_EQ(check(x, w, b), "");
    EXPECT_EQ(cpu::dnnl_weight_cache_stats().entries, 1);
  }
}

TEST_F(DnnlWeightCache, ABudgetOfZeroKeepsNothing) {
  cpu::set_dnnl_weight_cache_bytes(0);
  EXPECT_EQ(cpu::dnnl_weight_cache_stats().entries, 0);
  const Tensor x = rnd({1, 8, 10, 10}), b = rnd({16}), w = frozen(rnd({16, 8, 3, 3}));
  const cpu::WeightCacheStats s0 = cpu::dnnl_weight_cache_stats();
  EXPECT_EQ(check(x, w, b), "");
  EXPECT_EQ(check(x, w, b), "");
  const cpu::WeightCacheStats s1 = cpu::dnnl_weight_cache_stats();
  EXPECT_EQ(s1.hits, s0.hits);
  EXPECT_EQ(s1.entries, 0);
}

TEST_F(DnnlWeightCache, ChannelSplitAtBatchOne) {
  // Two threads split a batch-1 convolution by output channels: each piece keeps its slice of
  // the weights; a grouped (depthwise) one splits by whole groups, with their input channels.
  flex::set_num_threads(2);
  if (cpu::dnnl_threads() < 2) GTEST_SKIP() << "no second thread";
  const Tensor x = rnd({1, 32, 24, 24}), b = rnd({80});
  Tensor w = frozen(rnd({80, 32, 3, 3}));
  const int64_t misses = cpu::dnnl_weight_cache_stats().misses;
  EXPECT_EQ(check(x, w, b), "");
  EXPECT_EQ(cpu::dnnl_weight_cache_stats().misses, misses + 2);  // two slices
  EXPECT_EQ(check(x, w, b), "");
  w.mul_(-1.0);
  EXPECT_EQ(check(x, w, b), "");
  const Tensor xd = rnd({1, 96, 40, 40}), bd = rnd({96});
  for (const Tensor& wd : {frozen(rnd({96, 1, 3, 3})), c(rnd({96, 1, 3, 3}))}) {
    EXPECT_EQ(check(xd, wd, bd, {.padding = {1}, .groups = 96}), "");
    EXPECT_EQ(check(xd, wd, bd, {.stride = {2}, .padding = {1}, .groups = 96}), "");
  }
  // Two output channels per group (a multiple of 16 groups per piece), and a channel multiplier.
  const Tensor wg = frozen(rnd({64, 1, 3, 3}));
  EXPECT_EQ(check(rnd({1, 32, 48, 48}), wg, rnd({64}), {.padding = {1}, .groups = 32}), "");
  const Tensor wm = c(rnd({96, 3, 3, 3}));
  EXPECT_EQ(check(xd, wm, bd, {.padding = {1}, .groups = 32}), "");
}

}  // namespace
}  // namespace ember::test

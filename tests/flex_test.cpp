// The flex backend's machinery: thread pool, caching allocator, strided loops, thread safety.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "ember/backends/flex/allocator.h"
#include "ember/backends/flex/thread_pool.h"
#include "ember/ember.h"

namespace ember {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int64_t n : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    flex::parallel_for(n, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, NestedCallsRunInline) {
  std::atomic<int64_t> total{0};
  flex::parallel_for(64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      flex::parallel_for(100, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
  });
  EXPECT_EQ(total.load(), 6400);
}

// Back-to-back jobs of different sizes: a worker that wakes late for one job must neither take
// part in the next with the old job's fields nor miscount its chunks (which would hang the
// caller). A watchdog turns a hang into a failure.
TEST(ThreadPool, BackToBackJobsOfDifferentSizes) {
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 1200 && !done; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!done) {
      std::fprintf(stderr, "ThreadPool.BackToBackJobsOfDifferentSizes: hung\n");
      std::_Exit(1);
    }
  });
  int64_t bad = 0;
  for (int it = 0; it < 200000; ++it) {
    const int64_t n = (it % 3 == 0) ? 2 : (it % 3 == 1) ? 1000 : 37;
    std::atomic<int64_t> covered{0}, outside{0};
    flex::parallel_for(n, 1, [&](int64_t b, int64_t e) {
      if (b < 0 || e > n || b > e) outside++;
      covered += e - b;
    });
    if (covered != n || outside != 0) ++bad;
  }
  done = true;
  watchdog.join();
  EXPECT_EQ(bad, 0);
}

TEST(ThreadPool, ExceptionsReachTheCallerAndThePoolKeepsWorking) {
  for (int rep = 0; rep < 100; ++rep) {
    EXPECT_THROW(flex::parallel_for(1000, 1,
                                    [&](int64_t b, int64_t) {
                                      if (b >= 500) throw ValueError("[test] chunk failed");
                                    }),
                 ValueError);
  }
  std::atomic<int64_t> covered{0};
  flex::parallel_for(1000, 1, [&](int64_t b, int64_t e) { covered += e - b; });
  EXPECT_EQ(covered.load(), 1000);
}

TEST(Allocator, ReusesFreedBlocks) {
  if (flex::allocates_exactly()) GTEST_SKIP() << "AddressSanitizer build: nothing is cached";
  flex::empty_cache();
  void* first;
  {
    Tensor a = empty({1 << 20});
    first = a.raw_data();
  }
  EXPECT_GE(flex::cached_bytes(), size_t(4) << 20);
  Tensor b = empty({1 << 20});
  EXPECT_EQ(b.raw_data(), first);  // the same block comes back: no fresh pages
  flex::empty_cache();
  EXPECT_EQ(flex::cached_bytes(), 0u);
}

TEST(Flex, LargeStridedOpsMatchContiguousOnes) {
  manual_seed(3);
  Tensor x = randn({300, 500});
  Tensor xt = x.t();  // non-contiguous
  Tensor a = (xt * 2 + exp(xt)).contiguous();
  Tensor b = (xt.contiguous() * 2 + exp(xt.contiguous()));
  EXPECT_TRUE(equal(a, b));
  EXPECT_TRUE(allclose(x.sum({0}), xt.sum({1}), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(x.sum(), xt.contiguous().sum(), 1e-4, 1e-2));
}

TEST(Flex, ConcurrentCallersFromManyThreadsAreSafe) {
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Tensor x = full({100000}, double(t));
        if ((x * 2).sum().item<double>() != 200000.0 * t) bad++;
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Random, SeedsReproduceAndStreamsAdvance) {
  manual_seed(42);
  Tensor a = rand({1000});
  Tensor b = rand({1000});
  manual_seed(42);
  Tensor c = rand({1000});
  EXPECT_TRUE(equal(a, c));
  EXPECT_FALSE(equal(a, b));
  // the same numbers whatever the thread count
  manual_seed(7);
  Tensor big = randn({1 << 18});
  flex::set_num_threads(1);
  manual_seed(7);
  Tensor big1 = randn({1 << 18});
  flex::set_num_threads(2);
  EXPECT_TRUE(equal(big, big1));
}

}  // namespace
}  // namespace ember

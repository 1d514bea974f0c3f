// DataLoader (ember/data/loader.h): batching, shuffling, workers, errors, early exit.
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>

#include "ember/data/loader.h"
#include "ember/ember.h"

#include "dataio/range_dataset.h"

using namespace ember;
using namespace ember::data;

namespace {
using test::range_ds;
template <class L>
std::vector<std::vector<int>> collect(L&& range) {
  std::vector<std::vector<int>> out;
  for (auto& b : range) out.push_back(b);
  return out;
}
/// Items whose get() throws at one index and counts how often it is called.
struct Flaky : Dataset<int> {
  int64_t bad;
  mutable std::atomic<int64_t> calls{0};
  explicit Flaky(int64_t b) : bad(b) {}
  int get(int64_t i) const override {
    ++calls;
    if (i == bad) throw ValueError("[Flaky] item " + std::to_string(i));
    return int(i);
  }
  int64_t size() const override { return 100; }
};
}  // namespace

TEST(DataLoader, BatchesInOrderWithAndWithoutDropLast) {
  DataLoader<int, VectorBatcher> l(range_ds(10), {.batch_size = 4});
  EXPECT_EQ(l.size(), 3);
  auto b = collect(l);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(b[2], (std::vector<int>{8, 9}));
  DataLoader<int, VectorBatcher> d(range_ds(10), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(d.size(), 2);
  EXPECT_EQ(collect(d).size(), 2u);
  DataLoader<int, VectorBatcher> e(range_ds(0), {.batch_size = 4, .workers = 2});
  EXPECT_EQ(collect(e).size(), 0u);
}

TEST(DataLoader, ShuffleIsPerEpochAndIndependentOfWorkers) {
  auto run = [](int workers, uint64_t epoch) {
    DataLoader<int, VectorBatcher> l(range_ds(103),
                                     {.batch_size = 8, .shuffle = true, .seed = 5,
                                      .workers = workers, .prefetch = 3});
    return collect(l.epoch(epoch));
  };
  auto e0 = run(0, 0), e1 = run(0, 1);
  EXPECT_NE(e0, e1);
  for (int w : {1, 2, 4, 7}) {
    EXPECT_EQ(run(w, 0), e0) << w << " workers";
    EXPECT_EQ(run(w, 1), e1) << w << " workers";
  }
  std::vector<int> flat;
  for (auto& b : e0) flat.insert(flat.end(), b.begin(), b.end());
  std::sort(flat.begin(), flat.end());
  std::vector<int> want(103);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(flat, want);  // each item exactly once per epoch

  // Range-for over the loader itself runs epochs 0, 1, ...; set_epoch picks the next.
  DataLoader<int, VectorBatcher> l(range_ds(103),
                                   {.batch_size = 8, .shuffle = true, .seed = 5, .workers = 2});
  EXPECT_EQ(collect(l), e0);
  EXPECT_EQ(collect(l), e1);
  l.set_epoch(0);
  EXPECT_EQ(collect(l), e0);
}

TEST(DataLoader, StackBatcherStacksTensorPairs) {
  std::vector<std::pair<Tensor, Tensor>> items;
  for (int i = 0; i < 5; ++i)
    items.push_back({full({2, 3}, float(i)), scalar_tensor(int64_t(i), kI64)});
  DataLoader<std::pair<Tensor, Tensor>> l(in_memory(items), {.batch_size = 2, .workers = 2});
  std::vector<int64_t> sizes, labels;
  for (auto& [x, y] : l) {
    EXPECT_EQ(x.shape(), Shape({y.size(0), 2, 3}));
    EXPECT_EQ(y.dtype(), kI64);
    sizes.push_back(x.size(0));
    for (int64_t v : y.to_vector<int64_t>()) labels.push_back(v);
    EXPECT_FLOAT_EQ(x.flatten().to_vector<float>()[0], float(labels[labels.size() - y.size(0)]));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  DataLoader<Tensor> t(in_memory(std::vector<Tensor>{ones({3}), zeros({3})}), {.batch_size = 2});
  for (auto& b : t) EXPECT_EQ(b.shape(), Shape({2, 3}));
}

TEST(DataLoader, UserBatcher) {
  auto sum = [](std::vector<int> v) { return std::accumulate(v.begin(), v.end(), 0); };
  DataLoader<int, decltype(sum)> l(range_ds(10), {.batch_size = 5, .workers = 3}, sum);
  std::vector<int> got;
  for (int s : l) got.push_back(s);
  EXPECT_EQ(got, (std::vector<int>{10, 35}));
}

TEST(DataLoader, WorkerErrorsReachTheCallerAtTheirBatch) {
  for (int workers : {0, 1, 3}) {
    auto ds = std::make_shared<Flaky>(42);  // batch 4 of size 10
    DataLoader<int, VectorBatcher> l(ds, {.batch_size = 10, .workers = workers});
    int seen = 0;
    try {
      for (auto& b : l) {
        EXPECT_EQ(b.front(), seen * 10);
        ++seen;
      }
      FAIL() << "no exception";
    } catch (const ValueError& e) {
      EXPECT_STREQ(e.what(), "[Flaky] item 42");
    }
    EXPECT_EQ(seen, 4) << workers << " workers";
  }
}

TEST(DataLoader, AbandoningALoopJoinsWorkers) {
  auto ds = std::make_shared<Flaky>(-1);
  {
    DataLoader<int, VectorBatcher> l(ds, {.batch_size = 1, .workers = 4, .prefetch = 2});
    for (auto& b : l) {
      if (b.front() == 3) break;
    }
    // Workers stop at most a window (workers * prefetch) ahead of the consumer.
    EXPECT_LE(ds->calls.load(), 4 + 4 * 2 + 4);
    int64_t after = ds->calls.load();
    for (auto& b : l) {
      (void)b;
      break;
    }
    EXPECT_GE(ds->calls.load(), after + 1);
  }
  // Begun but never advanced: the iterator's destructor joins.
  DataLoader<int, VectorBatcher> l(ds, {.batch_size = 1, .workers = 2});
  { auto it = l.begin(); }
  SUCCEED();
}

TEST(DataLoader, BadOptions) {
  EXPECT_THROW((DataLoader<int, VectorBatcher>(range_ds(3), {.batch_size = 0})), ValueError);
  EXPECT_THROW((DataLoader<int, VectorBatcher>(range_ds(3), {.workers = -1})), ValueError);
  EXPECT_THROW((DataLoader<int, VectorBatcher>(range_ds(3), {.prefetch = 0})), ValueError);
}

TEST(DataLoader, OverTransformedFashionLikeData) {
  // A pipeline: shuffle -> partial -> map to (x, y) pairs -> loader with workers.
  auto pairs = map(partial(shuffle(range_ds(50), 1), 0, 20), [](int i) {
    return std::pair<Tensor, Tensor>{full({1, 4, 4}, float(i) / 50), scalar_tensor(i % 10, kI64)};
  });
  DataLoader<std::pair<Tensor, Tensor>> l(pairs, {.batch_size = 8, .shuffle = true, .workers = 2});
  int64_t n = 0;
  for (auto& [x, y] : l) {
    EXPECT_EQ(x.shape().size(), 4u);
    n += y.size(0);
  }
  EXPECT_EQ(n, 20);
}

TEST(DataLoader, EpochFromAStartBatchSkipsWithoutMakingThem) {
  auto ds = std::make_shared<Flaky>(-1);
  for (int workers : {0, 2}) {
    DataLoader<int, VectorBatcher> l(ds, {.batch_size = 8, .shuffle = true, .seed = 9,
                                          .workers = workers});
    auto whole = collect(l.epoch(3));
    ds->calls = 0;
    auto tail = collect(l.epoch(3, 5));
    ASSERT_EQ(tail.size(), whole.size() - 5);
    for (size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], whole[i + 5]) << workers;
    EXPECT_EQ(ds->calls, 100 - 5 * 8) << "skipped batches were made";
    EXPECT_TRUE(collect(l.epoch(3, l.size())).empty());
    EXPECT_THROW(collect(l.epoch(3, l.size() + 1)), IndexError);
    EXPECT_THROW(collect(l.epoch(3, -1)), IndexError);
  }
}

// Datasets and transforms (ember/data/dataset.h, transforms.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "ember/data/transforms.h"

#include "dataio/range_dataset.h"

using namespace ember;
using namespace ember::data;

namespace {
using test::range_ds;
template <class T>
std::vector<T> all(const DatasetPtr<T>& d) {
  std::vector<T> out;
  for (int64_t i = 0; i < d->size(); ++i) out.push_back(d->get(i));
  return out;
}
}  // namespace

TEST(DataDataset, InMemoryGetSizeAndIndexErrors) {
  auto d = in_memory(std::vector<std::string>{"a", "b", "c"});
  EXPECT_EQ(d->size(), 3);
  EXPECT_EQ(d->get(1), "b");
  EXPECT_THROW(d->get(3), IndexError);
  EXPECT_THROW(d->get(-1), IndexError);
  try {
    d->get(7);
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index 7 out of range for a dataset of size 3"),
              std::string::npos);
  }
}

TEST(DataDataset, MapAndCompose) {
  auto d = map(range_ds(4), [](int x) { return x * 10; });
  EXPECT_EQ(all(d), (std::vector<int>{0, 10, 20, 30}));
  auto f = compose([](int x) { return x + 1; }, [](int x) { return std::to_string(x); });
  auto s = map(range_ds(3), f);
  EXPECT_EQ(all(s), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_THROW(d->get(4), IndexError);
}

TEST(DataDataset, ShuffleIsASeededPermutation) {
  auto a = all(shuffle(range_ds(100), 7));
  auto b = all(shuffle(range_ds(100), 7));
  auto c = all(shuffle(range_ds(100), 8));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, all(range_ds(100)));
  EXPECT_NE(a, all(range_ds(100)));
  EXPECT_EQ(shuffle(range_ds(0), 1)->size(), 0);
}

TEST(DataDataset, PartialTakesARange) {
  EXPECT_EQ(all(partial(range_ds(10), 2, 5)), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(all(partial(range_ds(10), -3, 100)), (std::vector<int>{7, 8, 9}));
  EXPECT_EQ(partial(range_ds(10), 4, 4)->size(), 0);
  EXPECT_THROW(partial(range_ds(10), 5, 3), ValueError);
  EXPECT_THROW(partial(range_ds(10), -20, 3), ValueError);
  EXPECT_THROW(partial(range_ds(10), 2, 5)->get(3), IndexError);
}

TEST(DataDataset, WindowsWithStride) {
  auto w = window(range_ds(7), 3, 2);
  ASSERT_EQ(w->size(), 3);
  EXPECT_EQ(w->get(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(w->get(2), (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(window(range_ds(7), 3)->size(), 5);
  EXPECT_EQ(window(range_ds(2), 3)->size(), 0);
  EXPECT_THROW(window(range_ds(7), 0), ValueError);
  EXPECT_THROW(window(range_ds(7), 2, 0), ValueError);
  EXPECT_THROW(w->get(3), IndexError);
}

TEST(DataDataset, ConcatJoinsInOrder) {
  auto c = concat<int>({range_ds(2), range_ds(0), map(range_ds(3), [](int x) { return x + 5; })});
  EXPECT_EQ(all(c), (std::vector<int>{0, 1, 5, 6, 7}));
  EXPECT_THROW(c->get(5), IndexError);
  EXPECT_EQ(concat<int>({})->size(), 0);
}

TEST(DataDataset, SampleWithoutReplacementHasNoRepeats) {
  auto s = all(sample(range_ds(50), 20, 3));
  EXPECT_EQ(s.size(), 20u);
  EXPECT_EQ(std::set<int>(s.begin(), s.end()).size(), 20u);
  EXPECT_EQ(s, all(sample(range_ds(50), 20, 3)));
  EXPECT_THROW(sample(range_ds(5), 6, 0), ValueError);
  EXPECT_THROW(sample(range_ds(5), -1, 0), ValueError);
}

TEST(DataDataset, SampleWithReplacementRepeatsAndCovers) {
  auto s = all(sample(range_ds(4), 400, 11, true));
  EXPECT_EQ(s.size(), 400u);
  std::vector<int> counts(4);
  for (int x : s) ++counts[size_t(x)];
  // 400 draws of 4 values: each near 100 (a fixed seed, so this is not flaky).
  for (int c : counts) EXPECT_GT(c, 60);
  EXPECT_EQ(s, all(sample(range_ds(4), 400, 11, true)));
  EXPECT_NE(s, all(sample(range_ds(4), 400, 12, true)));
  EXPECT_THROW(sample(range_ds(0), 1, 0, true), ValueError);
  EXPECT_EQ(sample(range_ds(0), 0, 0, true)->size(), 0);
}

TEST(DataDataset, UserDatasetSubclass) {
  struct Squares : Dataset<int64_t> {
    int64_t get(int64_t i) const override { return i * i; }
    int64_t size() const override { return 5; }
  };
  DatasetPtr<int64_t> d = std::make_shared<Squares>();
  EXPECT_EQ(all(partial(shuffle(d, 1), 0, 5)).size(), 5u);
  EXPECT_EQ(all(map(d, [](int64_t x) { return x + 1; })), (std::vector<int64_t>{1, 2, 5, 10, 17}));
}

// Index ops beyond the golden cases: error messages, inputs big enough to take the parallel
// paths (checked against plain loops), and API forms goldens cannot express.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "ember/ember.h"

namespace ember {
namespace {

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

void expect_has(const std::string& s, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(s.find(p), std::string::npos) << s << " lacks " << p;
}

TEST(IndexErrors, NameTheOpTheIndexAndTheDimSize) {
  Tensor x = zeros({3, 4});
  Tensor bad = tensor<int64_t>({0, 7, 1}).reshape({1, 3});
  expect_has(message_of<IndexError>([&] { gather(x, 1, bad); }),
             {"[gather]", "index 7", "dim 1", "size 4"});
  expect_has(message_of<IndexError>([&] { index_select(x, 0, tensor<int64_t>({-1})); }),
             {"[index_select]", "index -1", "dim 0", "size 3"});
  expect_has(message_of<IndexError>([&] { take(x, tensor<int64_t>({12})); }),
             {"[take]", "index 12", "12 elements"});
  expect_has(message_of<IndexError>([&] {
               index_put(x, {Tensor(), tensor<int64_t>({4})}, scalar_tensor(1.f));
             }),
             {"[index_put]", "index 4", "dim 1", "size 4"});
  Tensor three = full({1, 1}, int64_t(3));
  expect_has(message_of<IndexError>([&] { scatter_add(x, 0, three, ones({1, 1})); }),
             {"[scatter_add]", "index 3", "dim 0", "size 3"});
  expect_has(message_of<IndexError>([&] { one_hot(tensor<int64_t>({0, 5}), 3); }),
             {"[one_hot]", "5", "3 classes"});
  expect_has(message_of<DTypeError>([&] { gather(x, 0, zeros({1, 1}, {kI32})); }),
             {"[gather]", "int64", "int32"});
  expect_has(message_of<ShapeError>([&] { index_put(x, {tensor<int64_t>({0, 1})}, ones({3, 3})); }),
             {"[index_put]", "[3, 3]"});
}

TEST(IndexErrors, BadIndexLeavesTheInputUntouched) {
  Tensor x = arange(6, {kF32}).reshape({2, 3});
  EXPECT_THROW(index_put(x, {tensor<int64_t>({0, 2})}, scalar_tensor(-1.f), true), IndexError);
  EXPECT_THROW(scatter(x, 1, tensor<int64_t>({0, 3}).reshape({1, 2}), 9.0), IndexError);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

// --- large inputs: parallel paths against plain loops ---
std::vector<int64_t> random_indices(int64_t n, int64_t hi, uint64_t seed) {
  manual_seed(seed);
  return randint(0, hi, {n}).to_vector<int64_t>();
}

TEST(IndexLarge, IndexSelectAndTakeMatchLoops) {
  const int64_t rows = 20000, cols = 7, m = 30000;
  Tensor x = arange(rows * cols, {kI64}).reshape({rows, cols});
  auto idx = random_indices(m, rows, 1);
  Tensor it = tensor(idx, {m});
  auto got = index_select(x, 0, it).to_vector<int64_t>();
  for (int64_t j = 0; j < m; j += 997)
    for (int64_t c = 0; c < cols; ++c)
      ASSERT_EQ(got[size_t(j * cols + c)], idx[size_t(j)] * cols + c);
  auto g2 = index_select(x.transpose(0, 1), 1, it).to_vector<int64_t>();
  for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(g2[size_t(c * m + 5)], idx[5] * cols + c);
  auto t = take(x, it).to_vector<int64_t>();
  for (int64_t j = 0; j < m; ++j) ASSERT_EQ(t[size_t(j)], idx[size_t(j)]);
}

TEST(IndexLarge, GatherScatterAddRoundTrip) {
  const int64_t n = 300, k = 400;
  Tensor x = arange(n * n, {kI64}).reshape({n, n});
  auto idx = random_indices(n * k, n, 2);
  Tensor it = tensor(idx, {n, k});
  auto g = gather(x, 1, it).to_vector<int64_t>();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; c += 37)
      ASSERT_EQ(g[size_t(r * k + c)], r * n + idx[size_t(r * k + c)]);
  // scatter_add of ones counts how often each column was picked per row.
  Tensor counted = scatter_add(zeros({n, n}, {kI64}), 1, it, ones({n, k}, {kI64}));
  auto counts = counted.to_vector<int64_t>();
  std::vector<int64_t> want(size_t(n * n), 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) ++want[size_t(r * n + idx[size_t(r * k + c)])];
  EXPECT_EQ(counts, want);
}

TEST(IndexLarge, IndexAddAndAccumulatingIndexPutAgree) {
  const int64_t n = 1000, d = 64, m = 5000;
  auto idx = random_indices(m, n, 3);
  Tensor it = tensor(idx, {m});
  Tensor src = arange(m * d, {kF64}).reshape({m, d});
  Tensor a = index_add(zeros({n, d}, {kF64}), 0, it, src, 2);
  Tensor b = index_put(zeros({n, d}, {kF64}), {it}, src * 2, true);
  EXPECT_TRUE(equal(a, b));
  std::vector<double> want(size_t(n * d), 0);
  for (int64_t j = 0; j < m; ++j)
    for (int64_t c = 0; c < d; ++c) want[size_t(idx[size_t(j)] * d + c)] += 2.0 * double(j * d + c);
  EXPECT_EQ(a.to_vector<double>(), want);
}

TEST(IndexLarge, MaskedSelectAndNonzeroMatchLoops) {
  manual_seed(4);
  Tensor x = randn({513, 257});
  Tensor m = gt(x, 0.3);
  auto xv = x.to_vector<float>();
  std::vector<float> sel;
  std::vector<int64_t> coords;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (xv[size_t(i)] > 0.3f) {
      sel.push_back(xv[size_t(i)]);
      coords.push_back(i / 257);
      coords.push_back(i % 257);
    }
  EXPECT_EQ(masked_select(x, m).to_vector<float>(), sel);
  Tensor nz = nonzero(m);
  EXPECT_EQ(nz.shape(), Shape({int64_t(sel.size()), 2}));
  EXPECT_EQ(nz.to_vector<int64_t>(), coords);
  Tensor f = masked_fill(x, m, 0.0);
  EXPECT_TRUE(all(lt(f, 0.30001)).item<bool>());
}

// --- API forms ---
TEST(IndexPut, EmptyOrAllColonIndicesWriteEverything) {
  Tensor x = zeros({2, 3});
  EXPECT_EQ(index_put(x, {}, tensor({1.f, 2.f, 3.f})).to_vector<float>(),
            (std::vector<float>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(index_put(x, {Tensor(), Tensor()}, scalar_tensor(4.f), true).sum().item<float>(), 24.f);
  Tensor s = scalar_tensor(1.5);
  EXPECT_EQ(index_put(s, {}, scalar_tensor(2.5), true).item<double>(), 4.0);
}

TEST(IndexPut, RepeatedIndicesLastWriteWins) {
  Tensor x = zeros({3});
  Tensor r = index_put(x, {tensor<int64_t>({1, 1, 1})}, tensor({1.f, 2.f, 3.f}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 3, 0}));
}

TEST(IndexOps, ResultsNeverAliasTheirInputs) {
  Tensor x = arange(6, {kF32}).reshape({2, 3});
  Tensor i = tensor<int64_t>({0});
  EXPECT_FALSE(index_select(x, 0, i).is_alias_of(x));
  EXPECT_FALSE(scatter(x, 0, i.reshape({1, 1}), 1.0).is_alias_of(x));
  EXPECT_FALSE(index_put(x, {}, scalar_tensor(1.f)).is_alias_of(x));
  EXPECT_FALSE(masked_fill(x, zeros({2, 3}, {kBool}), 1.0).is_alias_of(x));
}

}  // namespace
}  // namespace ember

#pragma once
// Deterministic splits (train / valid / test by ratio and seed) and stratified sampling. Orders
// come from SplitMix64 (ember/data/transforms.h), so a seed splits a dataset the same way on
// every platform; each part is a lazy view of its source.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ember/data/transforms.h"

namespace ember::data {

/// Sizes of the parts of `n` items split by `ratios` (positive, summing to 1 within 1e-6):
/// floor(n * ratio) each, the remainder handed out one item at a time from the first part on,
/// as torch.utils.data.random_split does with fractions.
inline std::vector<int64_t> split_sizes(int64_t n, const std::vector<double>& ratios) {
  detail::check_value(!ratios.empty(), "random_split", "expected at least one ratio");
  double total = 0;
  for (double r : ratios) {
    detail::check_value(r >= 0 && std::isfinite(r), "random_split",
                        "ratios must be finite and >= 0, found " + std::to_string(r));
    total += r;
  }
  detail::check_value(std::fabs(total - 1.0) <= 1e-6, "random_split",
                      "ratios must sum to 1, found a sum of " + std::to_string(total));
  std::vector<int64_t> sizes;
  int64_t used = 0;
  for (double r : ratios) {
    sizes.push_back(int64_t(std::floor(double(n) * r)));
    used += sizes.back();
  }
  for (size_t i = 0; used < n; i = (i + 1) % sizes.size(), ++used) ++sizes[i];
  return sizes;
}

/// The items of `src` in an order fixed by `seed`, cut into parts by `ratios` (e.g. {0.8, 0.1,
/// 0.1}): every item lands in exactly one part.
template <class T>
std::vector<DatasetPtr<T>> random_split(DatasetPtr<T> src, const std::vector<double>& ratios,
                                        uint64_t seed) {
  const std::vector<int64_t> sizes = split_sizes(src->size(), ratios);
  const std::vector<int64_t> order = detail::permutation(src->size(), seed);
  std::vector<DatasetPtr<T>> parts;
  size_t at = 0;
  for (int64_t s : sizes) {
    std::vector<int64_t> idx(order.begin() + ptrdiff_t(at),
                             order.begin() + ptrdiff_t(at + size_t(s)));
    at += size_t(s);
    parts.push_back(std::make_shared<IndexedDataset<T>>(src, std::move(idx), "random_split"));
  }
  return parts;
}

namespace detail {
/// Item indices grouped by label (labels in increasing order), each group in `seed`'s order.
inline std::map<int64_t, std::vector<int64_t>> shuffled_groups(const std::vector<int64_t>& labels,
                                                               uint64_t seed) {
  std::map<int64_t, std::vector<int64_t>> groups;
  for (int64_t i : permutation(int64_t(labels.size()), seed))
    groups[labels[size_t(i)]].push_back(i);
  return groups;
}
inline void check_labels(const char* what, size_t labels, int64_t size) {
  check_value(int64_t(labels) == size, what,
              "expected one label per item (" + std::to_string(size) + "), found " +
                  std::to_string(labels));
}
}  // namespace detail

/// random_split within each class: every part gets each label's items in (nearly) the ratios'
/// proportions, so class balance is the same in train, valid and test. `labels[i]` is item i's
/// class. Within a part, items are in index order (shuffle() it for training).
template <class T>
std::vector<DatasetPtr<T>> stratified_split(DatasetPtr<T> src, const std::vector<int64_t>& labels,
                                            const std::vector<double>& ratios, uint64_t seed) {
  detail::check_labels("stratified_split", labels.size(), src->size());
  std::vector<std::vector<int64_t>> idx(ratios.size());
  for (auto& [label, members] : detail::shuffled_groups(labels, seed)) {
    const std::vector<int64_t> sizes = split_sizes(int64_t(members.size()), ratios);
    size_t at = 0;
    for (size_t p = 0; p < sizes.size(); ++p)
      for (int64_t k = 0; k < sizes[p]; ++k) idx[p].push_back(members[at++]);
  }
  std::vector<DatasetPtr<T>> parts;
  for (auto& v : idx) {
    std::sort(v.begin(), v.end());
    parts.push_back(std::make_shared<IndexedDataset<T>>(src, std::move(v), "stratified_split"));
  }
  return parts;
}

/// `n` items drawn without replacement so that each class keeps its share of the dataset: class c
/// with count_c items gets n * count_c / size items, rounded by largest remainder (ties to the
/// smaller label), so the quotas sum to n.
template <class T>
DatasetPtr<T> stratified_sample(DatasetPtr<T> src, const std::vector<int64_t>& labels, int64_t n,
                                uint64_t seed) {
  detail::check_labels("stratified_sample", labels.size(), src->size());
  const int64_t size = src->size();
  detail::check_value(
      n >= 0 && n <= size, "stratified_sample",
      "expected 0 <= n <= " + std::to_string(size) + ", found " + std::to_string(n));
  auto groups = detail::shuffled_groups(labels, seed);
  std::vector<std::pair<int64_t, int64_t>> rem;  // (remainder numerator, label)
  std::map<int64_t, int64_t> quota;
  int64_t given = 0;
  for (auto& [label, members] : groups) {
    const int64_t c = int64_t(members.size());
    quota[label] = n * c / size;
    given += quota[label];
    rem.emplace_back(n * c % size, label);
  }
  std::stable_sort(rem.begin(), rem.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < n; ++i, ++given) ++quota[rem[i].second];
  std::vector<int64_t> idx;
  for (auto& [label, members] : groups)
    idx.insert(idx.end(), members.begin(), members.begin() + ptrdiff_t(quota[label]));
  std::sort(idx.begin(), idx.end());
  return std::make_shared<IndexedDataset<T>>(std::move(src), std::move(idx), "stratified_sample");
}

}  // namespace ember::data

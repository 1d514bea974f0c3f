#pragma once
// Dataset transforms: lazy views over a source dataset (map, shuffle, partial, window, concat,
// sample). Each keeps its source alive and does its work in get(), so they compose freely.
#include <algorithm>
#include <functional>
#include <type_traits>

#include "ember/data/dataset.h"

namespace ember::data {

namespace detail {
/// SplitMix64: a tiny, fully specified generator, so a seed gives the same order on every
/// platform (std::shuffle and std distributions are implementation-defined).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) without modulo bias (rejection sampling).
  uint64_t below(uint64_t n) {
    uint64_t limit = ~uint64_t(0) - (~uint64_t(0) % n);
    uint64_t x;
    do x = next(); while (x >= limit);
    return x % n;
  }
};
/// A permutation of [0, n) determined by `seed` (Fisher-Yates).
inline std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[size_t(i)] = i;
  SplitMix64 g{seed};
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[size_t(i)], p[g.below(uint64_t(i) + 1)]);
  return p;
}
inline void check_value(bool ok, const char* what, const std::string& msg) {
  if (!ok) throw ValueError(std::string("[") + what + "] " + msg);
}
}  // namespace detail

/// Items of `src` passed through `fn` (applied on every get).
template <class U, class T>
class MapDataset final : public Dataset<U> {
 public:
  MapDataset(DatasetPtr<T> src, std::function<U(T)> fn)
      : src_(std::move(src)), fn_(std::move(fn)) {}
  U get(int64_t i) const override { return fn_(src_->get(i)); }
  int64_t size() const override { return src_->size(); }

 private:
  DatasetPtr<T> src_;
  std::function<U(T)> fn_;
};

/// Items of `src` at the positions in `indices` (shuffle, partial, sample are all this).
template <class T>
class IndexedDataset final : public Dataset<T> {
 public:
  IndexedDataset(DatasetPtr<T> src, std::vector<int64_t> indices, const char* name)
      : src_(std::move(src)), indices_(std::move(indices)), name_(name) {}
  T get(int64_t i) const override {
    detail::check_item_index(name_, i, size());
    return src_->get(indices_[size_t(i)]);
  }
  int64_t size() const override { return int64_t(indices_.size()); }
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  DatasetPtr<T> src_;
  std::vector<int64_t> indices_;
  const char* name_;
};

/// Windows of `size` consecutive items, starting every `stride` items (the last full window
/// ends at or before the end of `src`).
template <class T>
class WindowDataset final : public Dataset<std::vector<T>> {
 public:
  WindowDataset(DatasetPtr<T> src, int64_t size, int64_t stride)
      : src_(std::move(src)), size_(size), stride_(stride) {
    detail::check_value(size > 0 && stride > 0, "window",
                        "expected size > 0 and stride > 0, found size " + std::to_string(size) +
                            " and stride " + std::to_string(stride));
  }
  std::vector<T> get(int64_t i) const override {
    detail::check_item_index("window", i, size());
    std::vector<T> w;
    w.reserve(size_t(size_));
    for (int64_t k = 0; k < size_; ++k) w.push_back(src_->get(i * stride_ + k));
    return w;
  }
  int64_t size() const override {
    int64_t n = src_->size();
    return n < size_ ? 0 : (n - size_) / stride_ + 1;
  }

 private:
  DatasetPtr<T> src_;
  int64_t size_, stride_;
};

/// The items of several datasets one after another.
template <class T>
class ConcatDataset final : public Dataset<T> {
 public:
  explicit ConcatDataset(std::vector<DatasetPtr<T>> parts) : parts_(std::move(parts)) {
    int64_t total = 0;
    for (auto& p : parts_) ends_.push_back(total += p->size());
  }
  T get(int64_t i) const override {
    detail::check_item_index("concat", i, size());
    size_t k = size_t(std::upper_bound(ends_.begin(), ends_.end(), i) - ends_.begin());
    return parts_[k]->get(i - (k == 0 ? 0 : ends_[k - 1]));
  }
  int64_t size() const override { return ends_.empty() ? 0 : ends_.back(); }

 private:
  std::vector<DatasetPtr<T>> parts_;
  std::vector<int64_t> ends_;  // running totals of sizes
};

// --- the functions users call ---

/// `fn` applied to each item: map(ds, [](Item x) { return ...; }).
template <class T, class F, class U = std::invoke_result_t<F, T>>
DatasetPtr<U> map(DatasetPtr<T> src, F fn) {
  return std::make_shared<MapDataset<U, T>>(std::move(src), std::function<U(T)>(std::move(fn)));
}

/// The items in an order fixed by `seed`.
template <class T>
DatasetPtr<T> shuffle(DatasetPtr<T> src, uint64_t seed) {
  auto p = detail::permutation(src->size(), seed);
  return std::make_shared<IndexedDataset<T>>(std::move(src), std::move(p), "shuffle");
}

/// Items [begin, end) of `src` (end clamps to size; negative values count from the end).
template <class T>
DatasetPtr<T> partial(DatasetPtr<T> src, int64_t begin, int64_t end) {
  int64_t n = src->size();
  if (begin < 0) begin += n;
  if (end < 0) end += n;
  end = std::min(end, n);
  detail::check_value(begin >= 0 && begin <= end, "partial",
                      "expected 0 <= begin <= end <= " + std::to_string(n) + ", found begin " +
                          std::to_string(begin) + " and end " + std::to_string(end));
  std::vector<int64_t> idx;
  for (int64_t i = begin; i < end; ++i) idx.push_back(i);
  return std::make_shared<IndexedDataset<T>>(std::move(src), std::move(idx), "partial");
}

/// Windows of `size` consecutive items every `stride` items; items are std::vector<T>.
template <class T>
DatasetPtr<std::vector<T>> window(DatasetPtr<T> src, int64_t size, int64_t stride = 1) {
  return std::make_shared<WindowDataset<T>>(std::move(src), size, stride);
}

/// The items of `parts` one after another.
template <class T>
DatasetPtr<T> concat(std::vector<DatasetPtr<T>> parts) {
  return std::make_shared<ConcatDataset<T>>(std::move(parts));
}

/// `n` items drawn with a seed: with replacement any item may repeat; without, `n` must not
/// exceed the size and each item appears at most once.
template <class T>
DatasetPtr<T> sample(DatasetPtr<T> src, int64_t n, uint64_t seed, bool replacement = false) {
  int64_t size = src->size();
  detail::check_value(n >= 0, "sample", "expected n >= 0, found " + std::to_string(n));
  std::vector<int64_t> idx;
  if (replacement) {
    detail::check_value(n == 0 || size > 0, "sample", "cannot draw from an empty dataset");
    detail::SplitMix64 g{seed};
    for (int64_t i = 0; i < n; ++i) idx.push_back(int64_t(g.below(uint64_t(size))));
  } else {
    detail::check_value(n <= size, "sample",
                        "without replacement expected n <= " + std::to_string(size) +
                            ", found " + std::to_string(n));
    idx = detail::permutation(size, seed);
    idx.resize(size_t(n));
  }
  return std::make_shared<IndexedDataset<T>>(std::move(src), std::move(idx), "sample");
}

/// Function composition for item transforms: compose(f, g)(x) == g(f(x)).
template <class F, class G>
auto compose(F f, G g) {
  return [f = std::move(f), g = std::move(g)](auto&& x) {
    return g(f(std::forward<decltype(x)>(x)));
  };
}

}  // namespace ember::data

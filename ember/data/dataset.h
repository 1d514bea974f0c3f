#pragma once
// Datasets: random access to items by index. Header-only templates kept light (no threads, no
// tensors); transforms live in ember/data/transforms.h, the loader in ember/data/loader.h.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/error.h"

namespace ember::data {

/// A random-access collection of items. get() must be safe to call from several threads at
/// once (the DataLoader's workers do): keep it const and free of hidden mutable state.
template <class T>
class Dataset {
 public:
  using Item = T;
  virtual ~Dataset() = default;
  /// The item at `i` in [0, size()); throws IndexError outside.
  virtual T get(int64_t i) const = 0;
  virtual int64_t size() const = 0;
};

/// Datasets are shared: transforms and loaders keep their sources alive through these.
template <class T>
using DatasetPtr = std::shared_ptr<const Dataset<T>>;

namespace detail {
inline void check_item_index(const char* what, int64_t i, int64_t n) {
  if (i < 0 || i >= n)
    throw IndexError(std::string("[") + what + "] index " + std::to_string(i) +
                     " out of range for a dataset of size " + std::to_string(n));
}
}  // namespace detail

/// Items held in memory, returned by copy.
template <class T>
class InMemoryDataset final : public Dataset<T> {
 public:
  explicit InMemoryDataset(std::vector<T> items) : items_(std::move(items)) {}
  T get(int64_t i) const override {
    detail::check_item_index("InMemoryDataset", i, size());
    return items_[size_t(i)];
  }
  int64_t size() const override { return int64_t(items_.size()); }
  const std::vector<T>& items() const { return items_; }

 private:
  std::vector<T> items_;
};

/// make_shared for an InMemoryDataset, typed as a DatasetPtr.
template <class T>
DatasetPtr<T> in_memory(std::vector<T> items) {
  return std::make_shared<InMemoryDataset<T>>(std::move(items));
}

}  // namespace ember::data

#pragma once
// The items 0, 1, ..., n-1: the dataset the data tests shuffle, transform and batch.
#include <numeric>
#include <vector>

#include "ember/data/dataset.h"

namespace ember::test {

inline data::DatasetPtr<int> range_ds(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return data::in_memory(v);
}

}  // namespace ember::test

// DistributedSampler (ember/data/sampler.h): one shared order per epoch, padded or cut, dealt
// out round-robin.
#include "ember/data/sampler.h"

#include "ember/data/transforms.h"

namespace ember::data {

DistributedSampler::DistributedSampler(int64_t dataset_size, const DistributedSamplerOptions& o)
    : size_(dataset_size), opt_(o) {
  detail::check_value(dataset_size >= 0, "DistributedSampler",
                      "expected a dataset size >= 0, found " + std::to_string(dataset_size));
  detail::check_value(o.num_replicas >= 1, "DistributedSampler",
                      "expected num_replicas >= 1, found " + std::to_string(o.num_replicas));
  detail::check_value(o.rank >= 0 && o.rank < o.num_replicas, "DistributedSampler",
                      "expected a rank in [0, " + std::to_string(o.num_replicas) + "), found " +
                          std::to_string(o.rank));
  // ceil(n / R) without overflow, or floor with drop_last.
  const int64_t r = o.num_replicas;
  num_samples_ = o.drop_last ? size_ / r : size_ / r + (size_ % r != 0);
  refresh();
}

void DistributedSampler::set_epoch(uint64_t epoch) {
  epoch_ = epoch;
  refresh();
}

void DistributedSampler::refresh() {
  std::vector<int64_t> order;
  if (opt_.shuffle) {
    // The DataLoader's mixing of seed and epoch: neighbouring epochs get unrelated orders.
    detail::SplitMix64 mix{opt_.seed ^ (0xD1B54A32D192ED03ull * (epoch_ + 1))};
    order = detail::permutation(size_, mix.next());
  } else {
    order.resize(size_t(size_));
    for (int64_t i = 0; i < size_; ++i) order[size_t(i)] = i;
  }
  indices_.clear();
  indices_.reserve(size_t(num_samples_));
  const int64_t total = total_size();
  for (int64_t k = opt_.rank; k < total; k += opt_.num_replicas)
    indices_.push_back(order[size_t(k % size_)]);  // k >= size_: padding from the start again
}

}  // namespace ember::data

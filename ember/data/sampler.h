#pragma once
// DistributedSampler: each of `num_replicas` ranks sees its own share of a dataset every epoch,
// like torch.utils.data.DistributedSampler: one permutation per epoch (seed, epoch) common to all
// ranks, padded by repeating its start to a multiple of num_replicas (or, with drop_last, cut
// to one), and dealt out round-robin (rank r takes positions r, r + R, r + 2R, ...).
#include <cstdint>
#include <memory>
#include <vector>

#include "ember/data/dataset.h"

namespace ember::data {

struct DistributedSamplerOptions {
  int64_t num_replicas = 1;
  int64_t rank = 0;
  bool shuffle = true;
  uint64_t seed = 0;
  /// Drop the tail that does not divide evenly instead of padding with repeated items.
  bool drop_last = false;
};

class DistributedSampler {
 public:
  /// Throws ValueError for a negative size, num_replicas < 1 or a rank outside [0, num_replicas).
  DistributedSampler(int64_t dataset_size, const DistributedSamplerOptions& o = {});
  /// The epoch whose order indices() gives (call it before each epoch, on every rank alike).
  void set_epoch(uint64_t epoch);
  uint64_t epoch() const { return epoch_; }
  /// Items this rank gets per epoch, and all ranks together.
  int64_t num_samples() const { return num_samples_; }
  int64_t total_size() const { return num_samples_ * opt_.num_replicas; }
  /// This rank's dataset indices for the current epoch, in order.
  const std::vector<int64_t>& indices() const { return indices_; }
  const DistributedSamplerOptions& options() const { return opt_; }

 private:
  void refresh();
  int64_t size_;
  DistributedSamplerOptions opt_;
  int64_t num_samples_ = 0;
  uint64_t epoch_ = 0;
  std::vector<int64_t> indices_;
};

/// The items of `src` that `sampler` gives this rank, following its set_epoch: load it with a
/// DataLoader without shuffle. set_epoch must not run while a loader is reading the shard.
template <class T>
class DistributedShard final : public Dataset<T> {
 public:
  DistributedShard(DatasetPtr<T> src, std::shared_ptr<const DistributedSampler> s)
      : src_(std::move(src)), s_(std::move(s)) {}
  T get(int64_t i) const override {
    detail::check_item_index("DistributedShard", i, size());
    return src_->get(s_->indices()[size_t(i)]);
  }
  int64_t size() const override { return s_->num_samples(); }

 private:
  DatasetPtr<T> src_;
  std::shared_ptr<const DistributedSampler> s_;
};

/// make_shared for a DistributedShard, typed as a DatasetPtr.
template <class T>
DatasetPtr<T> distributed_shard(DatasetPtr<T> src, std::shared_ptr<const DistributedSampler> s) {
  return std::make_shared<DistributedShard<T>>(std::move(src), std::move(s));
}

/// A loader over a distributed_shard whose epoch(e) first sets the sampler's epoch to e: what
/// train::Learner::fit calls (size() and epoch(e, start)), so each epoch gets its own order.
template <class Loader>
class SamplerEpochs {
 public:
  SamplerEpochs(Loader& loader, std::shared_ptr<DistributedSampler> sampler)
      : loader_(loader), sampler_(std::move(sampler)) {}
  int64_t size() const { return loader_.size(); }
  auto epoch(uint64_t e, int64_t start = 0) {
    sampler_->set_epoch(e);
    return loader_.epoch(e, start);
  }

 private:
  Loader& loader_;
  std::shared_ptr<DistributedSampler> sampler_;
};

}  // namespace ember::data

// The Learner's view of FullyShardedDataParallel (distributed::data_parallel(fsdp)): backward,
// metric sums, and checkpoints whose model and optimizer state are gathered on every rank (the
// shards' optimizer buffers saved as each unit's elements, so a resume may change world size).
#include "ember/distributed/fsdp.h"

#include "ember/ops/creation.h"
#include "ember/ops/layout.h"

namespace ember::distributed {

namespace {
class FsdpBridge final : public train::DataParallel {
 public:
  explicit FsdpBridge(FullyShardedDataParallel& f) : fsdp_(f) {}
  int rank() const override { return fsdp_.group().rank(); }
  int world_size() const override { return fsdp_.group().size(); }
  void backward(const Tensor& loss, Gradients& into, bool) override {
    fsdp_.backward(loss, {.accumulate_into = &into});
  }
  void sum(std::vector<double>& v) override {
    if (v.empty()) return;
    // On the shards' device: a torchrun-style launch has NCCL only, for CUDA tensors.
    std::vector<Tensor> ps = fsdp_.parameters();
    const Device dev = ps.empty() ? Device::flex() : ps[0].device().without_layers();
    Tensor t = tensor(v, {int64_t(v.size())}, DType::F64, Device::flex()).to(dev);
    fsdp_.group().all_reduce(t).wait();
    v = t.to_vector<double>();
  }
  bool shards_parameters() const override { return true; }
  // "state.<u>.<name>" of the optimizer over parameters() (one shard a unit): gathered and cut
  // to the unit's elements, so the saved form does not depend on the world size.
  optim::State checkpoint_optimizer(const optim::State& local) override {
    optim::State out = local;
    NoGradGuard no_grad;
    const int64_t R = fsdp_.group().size();
    for (auto& [k, t] : out.tensors) {
      const size_t u = unit_of(k);
      if (u >= fsdp_.num_units() || t.numel() != chunk(u)) continue;
      Tensor full = zeros({R * chunk(u)}, {t.dtype(), t.device().without_layers()});
      fsdp_.group().all_gather(full, t.detach().reshape({-1}).contiguous()).wait();
      t = full.narrow(0, 0, fsdp_.unit_numel(u)).clone();
    }
    return out;
  }
  optim::State local_optimizer(const optim::State& saved) override {
    optim::State out = saved;
    const int64_t R = fsdp_.group().size(), r = fsdp_.group().rank();
    for (auto& [k, t] : out.tensors) {
      const size_t u = unit_of(k);
      if (u >= fsdp_.num_units() || t.numel() != fsdp_.unit_numel(u)) continue;
      const int64_t pad = R * chunk(u) - t.numel();
      Tensor flat = t.detach().reshape({-1});
      if (pad > 0) flat = cat({flat, zeros({pad}, {t.dtype(), t.device()})}, 0);
      t = flat.narrow(0, r * chunk(u), chunk(u)).clone();
    }
    return out;
  }
  void load_model(const std::vector<std::pair<std::string, Tensor>>& sd) override {
    fsdp_.load_state_dict(sd);
  }

 private:
  int64_t chunk(size_t u) const { return fsdp_.parameters()[u].numel(); }
  static size_t unit_of(const std::string& key) {  // "state.<u>.<name>"; npos when not one
    if (key.rfind("state.", 0) != 0) return std::string::npos;
    size_t u = 0, i = 6;
    for (; i < key.size() && key[i] >= '0' && key[i] <= '9' && i < 18; ++i)
      u = u * 10 + size_t(key[i] - '0');
    return i > 6 && i < key.size() && key[i] == '.' ? u : std::string::npos;
  }
  FullyShardedDataParallel& fsdp_;
};
}  // namespace

std::shared_ptr<train::DataParallel> data_parallel(FullyShardedDataParallel& fsdp) {
  return std::make_shared<FsdpBridge>(fsdp);
}

}  // namespace ember::distributed

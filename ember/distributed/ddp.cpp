// DistributedDataParallel: parameters in buckets (reverse registration order, which is roughly
// the order backward finishes them), each bucket all-reduced as one flat tensor. The autodiff
// engine's leaf hook (ember/autodiff/hooks.h) says when a parameter's gradient is final; a
// bucket whose parameters are all final starts at once, in bucket order on every rank (so ranks
// that finish parameters in different orders still issue the same collectives in the same
// order). Parameters the backward pass cannot reach (unused in this forward) count as final
// before it starts, with zeros for the gradients this rank lacks; one small all-reduce of which
// ranks had a gradient at all leaves the parameters no rank used without one.
#include <algorithm>
#include <unordered_map>

#include "ember/autodiff/hooks.h"
#include "ember/distributed.h"
#include "ember/nn/module.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"

namespace ember::distributed {

struct DistributedDataParallel::Impl {
  struct Bucket {
    std::vector<int> params;
    int ready = 0;
    bool launched = false;
    Tensor flat;
    Work work;
  };
  nn::Module& module;
  ProcessGroup& group;
  DDPOptions opt;
  std::vector<std::string> names;
  std::vector<Tensor> params;
  std::vector<Bucket> buckets;
  std::vector<int> bucket_of;
  bool sync = true;
  // per backward
  std::unordered_map<const AutogradMeta*, int> index;
  std::vector<char> final_;  // parameter i's gradient is final in this pass
  size_t next = 0;           // the next bucket to launch
  std::vector<std::string> unused;
  int early = 0;  // buckets started inside backward

  Impl(nn::Module& m, ProcessGroup& g, const DDPOptions& o) : module(m), group(g), opt(o) {}

  Tensor grad_or_zeros(int i, const Gradients& grads) const {
    const Tensor& p = params[size_t(i)];
    Tensor gr = grads.contains(p) ? grads.get(p) : Tensor();
    return gr.defined() ? gr : zeros(p.shape(), {p.dtype(), p.device().without_layers()});
  }
  void launch(Bucket& b, const Gradients& grads) {
    TensorList parts;
    parts.reserve(b.params.size());
    for (int i : b.params) parts.push_back(grad_or_zeros(i, grads).detach().reshape({-1}));
    b.flat = parts.size() == 1 ? parts[0].clone() : cat(parts, 0);
    b.work = group.all_reduce(b.flat, opt.reduce);
    b.launched = true;
  }
  void launch_ready(const Gradients& grads) {
    while (next < buckets.size() && buckets[next].ready == int(buckets[next].params.size()))
      launch(buckets[next++], grads);
  }
  static void on_leaf(void* ctx, const AutogradMeta* leaf, Gradients& grads) {
    auto& d = *static_cast<Impl*>(ctx);
    auto it = d.index.find(leaf);
    if (it == d.index.end() || d.final_[size_t(it->second)]) return;
    d.final_[size_t(it->second)] = 1;
    ++d.buckets[size_t(d.bucket_of[size_t(it->second)])].ready;
    d.launch_ready(grads);
    // MPI progresses nonblocking collectives only inside MPI calls: poll the ones in flight.
    for (size_t b = 0; b < d.next; ++b) (void)d.buckets[b].work.is_completed();
  }
};

namespace {
void build_buckets(DistributedDataParallel::Impl& d) {
  const double cap = std::max(d.opt.bucket_cap_mb, 0.0) * 1024 * 1024;
  d.bucket_of.assign(d.params.size(), -1);
  double bytes = 0;
  for (int i = int(d.params.size()) - 1; i >= 0; --i) {
    const Tensor& p = d.params[size_t(i)];
    const double nb = double(p.nbytes());
    bool fresh = d.buckets.empty() || bytes + nb > cap;
    if (!fresh) {  // one dtype and one device per bucket (one flat tensor)
      const Tensor& q = d.params[size_t(d.buckets.back().params.front())];
      fresh = q.dtype() != p.dtype() || !q.device().same_place(p.device());
    }
    if (fresh) {
      d.buckets.emplace_back();
      bytes = 0;
    }
    d.buckets.back().params.push_back(i);
    d.bucket_of[size_t(i)] = int(d.buckets.size()) - 1;
    bytes += nb;
  }
}
}  // namespace

DistributedDataParallel::DistributedDataParallel(nn::Module& module, const DDPOptions& o) {
  ProcessGroup& g = o.group ? *o.group : world();
  impl_ = std::make_unique<Impl>(module, g, o);
  if (o.reduce != ReduceOp::Avg && o.reduce != ReduceOp::Sum)
    throw ValueError("[DistributedDataParallel] expected reduce = Avg or Sum, found Max or Min");
  for (auto& [name, p] : module.named_parameters()) {
    if (!p.requires_grad()) continue;
    impl_->names.push_back(name);
    impl_->params.push_back(p);
  }
  build_buckets(*impl_);
  // Every replica starts from rank 0's values.
  NoGradGuard no_grad;
  std::vector<Work> works;
  std::vector<Tensor> ts = module.parameters();
  if (o.broadcast_buffers)
    for (Tensor& b : module.buffers()) ts.push_back(b);
  for (Tensor& t : ts) works.push_back(g.broadcast(t, 0));
  for (Work& w : works) w.wait();
}

DistributedDataParallel::~DistributedDataParallel() = default;

Tensor DistributedDataParallel::forward(const Tensor& x) {
  // PyTorch's default: rank 0's buffers (BatchNorm statistics) before every forward, so the
  // replicas normalise alike; under no_sync too (the statistics change in forward).
  if (impl_->opt.broadcast_buffers && impl_->group.size() > 1) {
    NoGradGuard no_grad;
    std::vector<Work> works;
    for (Tensor& b : impl_->module.buffers()) works.push_back(impl_->group.broadcast(b, 0));
    for (Work& w : works) w.wait();
  }
  return impl_->module.forward(x);
}
nn::Module& DistributedDataParallel::module() { return impl_->module; }
ProcessGroup& DistributedDataParallel::group() { return impl_->group; }

Gradients DistributedDataParallel::backward(const Tensor& loss, const BackwardOptions& o) {
  Impl& d = *impl_;
  if (!d.sync) return loss.backward(o);
  d.index.clear();
  for (size_t i = 0; i < d.params.size(); ++i) d.index[autodiff::leaf_key(d.params[i])] = int(i);
  d.final_.assign(d.params.size(), 0);
  for (auto& b : d.buckets) {
    b.ready = 0;
    b.launched = false;
    b.flat = Tensor();
    b.work = Work();
  }
  d.next = 0;
  // Parameters backward cannot reach (unused in this forward) are final already: their buckets
  // may start before backward (PyTorch's find_unused_parameters does the same walk).
  const Gradients none;
  const Gradients& before = o.accumulate_into ? *o.accumulate_into : none;
  const auto reach = autodiff::reachable_leaves(loss);
  for (size_t i = 0; i < d.params.size(); ++i)
    if (!reach.count(autodiff::leaf_key(d.params[i]))) {
      d.final_[i] = 1;
      ++d.buckets[size_t(d.bucket_of[i])].ready;
    }
  d.launch_ready(before);
  Gradients grads;
  {
    autodiff::ScopedLeafHook hook(&Impl::on_leaf, &d);
    grads = loss.backward(o);
  }
  d.early = int(d.next);
  // Buckets still waiting (a leaf backward reached but gave no gradient): start them now.
  for (; d.next < d.buckets.size(); ++d.next) d.launch(d.buckets[d.next], grads);
  // Which parameters some rank had a gradient for (the others stay without one).
  std::vector<uint8_t> has(d.params.size());
  for (size_t i = 0; i < d.params.size(); ++i)
    has[i] = grads.contains(d.params[i]) && grads.get(d.params[i]).defined();
  // On the parameters' device: a torchrun-style launch has NCCL only, for CUDA tensors.
  const Device dev = d.params.empty() ? Device::flex() : d.params[0].device().without_layers();
  Tensor used = tensor(has, {int64_t(has.size())}, DType::U8, Device::flex()).to(dev);
  Work used_work = d.group.all_reduce(used, ReduceOp::Max);
  used_work.wait();
  const std::vector<uint8_t> any = used.to_vector<uint8_t>();
  NoGradGuard no_grad;
  d.unused.clear();
  for (auto& b : d.buckets) {
    b.work.wait();
    Shape sizes;
    for (int i : b.params) sizes.push_back(d.params[size_t(i)].numel());
    TensorList parts = b.params.size() == 1 ? TensorList{b.flat} : split(b.flat, sizes, 0);
    for (size_t k = 0; k < b.params.size(); ++k) {
      const int i = b.params[k];
      const Tensor& p = d.params[size_t(i)];
      if (!any[size_t(i)]) {
        d.unused.push_back(d.names[size_t(i)]);
        continue;
      }
      Tensor g = parts[k].reshape(p.shape());
      grads.set(p, g);
      if (o.accumulate_into) o.accumulate_into->set(p, g);
    }
    b.flat = Tensor();
    b.work = Work();
  }
  std::reverse(d.unused.begin(), d.unused.end());  // registration order
  return grads;
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& d) : d_(d), prev_(d.impl_->sync) {
  d.impl_->sync = false;
}
DistributedDataParallel::NoSync::~NoSync() { d_.impl_->sync = prev_; }

std::vector<std::vector<std::string>> DistributedDataParallel::buckets() const {
  std::vector<std::vector<std::string>> out;
  for (auto& b : impl_->buckets) {
    out.emplace_back();
    for (int i : b.params) out.back().push_back(impl_->names[size_t(i)]);
  }
  return out;
}

std::vector<std::string> DistributedDataParallel::unused_parameters() const { return impl_->unused; }
int DistributedDataParallel::buckets_started_in_backward() const { return impl_->early; }

namespace {
class LearnerBridge final : public train::DataParallel {
 public:
  explicit LearnerBridge(DistributedDataParallel& d) : ddp_(d) {}
  int rank() const override { return ddp_.group().rank(); }
  int world_size() const override { return ddp_.group().size(); }
  void backward(const Tensor& loss, Gradients& into, bool sync) override {
    if (sync) {
      ddp_.backward(loss, {.accumulate_into = &into});
    } else {
      auto local = ddp_.no_sync();
      ddp_.backward(loss, {.accumulate_into = &into});
    }
  }
  void sum(std::vector<double>& v) override {
    if (v.empty()) return;
    // On the model's device: a torchrun-style launch has NCCL only, for CUDA tensors.
    std::vector<Tensor> ps = ddp_.module().parameters();
    const Device dev = ps.empty() ? Device::flex() : ps[0].device().without_layers();
    Tensor t = tensor(v, {int64_t(v.size())}, DType::F64, Device::flex()).to(dev);
    ddp_.group().all_reduce(t).wait();
    v = t.to_vector<double>();
  }

 private:
  DistributedDataParallel& ddp_;
};
}  // namespace

std::shared_ptr<train::DataParallel> data_parallel(DistributedDataParallel& ddp) {
  return std::make_shared<LearnerBridge>(ddp);
}

}  // namespace ember::distributed

// FullyShardedDataParallel. Each unit's parameters are views of one flat buffer of
// world_size * chunk elements (its Storage); rank r keeps elements [r * chunk, (r + 1) * chunk)
// as its shard. Freeing a unit moves the block out of that Storage and marks it pending with the
// unit's Regather (a PendingWrite): every read of a parameter goes through detail::ready(), so
// the first read after a free all-gathers the unit into a fresh block and moves it back in. The
// Storage object, and so every view and every tensor autodiff saved, stays the same, and its
// version counter is never bumped (saved tensors stay valid). Gradients of a unit are final
// when all its leaves are (the autodiff leaf hook): they are joined, reduce-scattered into the
// shard's gradient in unit order (the same on every rank) and dropped.
#include "ember/distributed/fsdp.h"

#include <algorithm>
#include <unordered_map>

#include "ember/autodiff/hooks.h"
#include "ember/device.h"
#include "ember/distributed/group.h"
#include "ember/ops/binary.h"
#include "ember/nn/module.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/tensor_impl.h"

namespace ember::distributed {

namespace {
// Moves the block (and what frees it) between two storages; the version counter stays.
void swap_block(Storage& a, Storage& b) {
  std::swap(a.data, b.data);
  std::swap(a.nbytes, b.nbytes);
  std::swap(a.free_fn, b.free_fn);
  std::swap(a.free_ctx, b.free_ctx);
  std::swap(a.last_use, b.last_use);
}
}  // namespace

struct FullyShardedDataParallel::Impl {
  struct Unit;
  // Reads of a freed unit gather it first.
  struct Regather final : PendingWrite {
    Impl* d = nullptr;
    size_t unit = 0;
    void materialize(Storage&) override { d->gather(unit); }
    void on_ready(Storage& s, std::function<void()> fn) override {
      materialize(s);
      fn();
    }
  };
  struct Unit {
    std::vector<std::string> names;
    std::vector<Tensor> params;  // the module's handles, views of `flat`
    std::vector<int64_t> offset;
    int64_t numel = 0, chunk = 0;
    DType dtype = DType::F32;
    Device device;
    std::shared_ptr<Storage> flat;
    Tensor shard;
    bool resident = false;
    uint64_t last_gather = 0;
    Regather regather;
    // per backward
    int ready = 0;
    Tensor grad;  // the shard's gradient
    Work work;
  };
  nn::Module& module;
  ProcessGroup& group;
  FSDPOptions opt;
  std::vector<Unit> units;
  int64_t gathered = 0, peak = 0, n_gathers = 0;
  uint64_t clock = 0;
  // per backward
  std::unordered_map<const AutogradMeta*, std::pair<size_t, size_t>> index;
  std::vector<std::vector<char>> final_;
  size_t next = 0;  // units launch from the last to the first
  size_t launched = 0;

  Impl(nn::Module& m, ProcessGroup& g, const FSDPOptions& o) : module(m), group(g), opt(o) {}

  int64_t unit_bytes(const Unit& u) const {
    return u.chunk * group.size() * int64_t(itemsize(u.dtype));
  }
  void release(size_t i) {
    Unit& u = units[i];
    if (!u.resident) return;
    // Queued work of a lazy device may still read the block.
    if (u.device.backend() != Backend::Cuda) synchronize(u.device);
    Storage empty;
    empty.place = u.flat->place;
    swap_block(*u.flat, empty);
    u.flat->nbytes = empty.nbytes;  // views keep checking against the full size
    u.flat->pending.store(&u.regather, std::memory_order_release);
    u.resident = false;
    gathered -= unit_bytes(u);
  }  // `empty` frees the block here
  void gather(size_t i) {
    Unit& u = units[i];
    if (u.resident) return;
    // Free the least recently gathered units first, so the peak stays at resident_units.
    for (;;) {
      int resident = 0;
      size_t oldest = units.size();
      for (size_t k = 0; k < units.size(); ++k)
        if (units[k].resident) {
          ++resident;
          if (oldest == units.size() || units[k].last_gather < units[oldest].last_gather) oldest = k;
        }
      if (resident < std::max(opt.resident_units, 1)) break;
      release(oldest);
    }
    NoGradGuard no_grad;
    Tensor full = ember::detail::empty_tensor({group.size() * u.chunk}, u.dtype, u.device);
    group.all_gather(full, u.shard).wait();
    ember::detail::ready(full);
    swap_block(*u.flat, *full.impl()->storage);
    u.flat->pending.store(nullptr, std::memory_order_release);
    u.resident = true;
    u.last_gather = ++clock;
    ++n_gathers;
    gathered += unit_bytes(u);
    peak = std::max(peak, gathered);
  }

  // Joins unit u's gradients (zeros where a rank has none), drops them from `grads` and starts
  // the reduce-scatter into the shard's gradient.
  void launch(size_t i, Gradients& grads) {
    Unit& u = units[i];
    NoGradGuard no_grad;
    TensorList parts;
    for (const Tensor& p : u.params) {
      Tensor g = grads.contains(p) ? grads.get(p) : Tensor();
      parts.push_back(g.defined() ? g.detach().reshape({-1})
                                  : zeros({p.numel()}, {u.dtype, u.device}));
      if (grads.contains(p)) grads.remove(p);
    }
    const int64_t pad = group.size() * u.chunk - u.numel;
    if (pad > 0) parts.push_back(zeros({pad}, {u.dtype, u.device}));
    Tensor flat = parts.size() == 1 ? parts[0].contiguous() : cat(parts, 0);
    u.grad = ember::detail::empty_tensor({u.chunk}, u.dtype, u.device);
    u.work = group.reduce_scatter(u.grad, flat, opt.reduce);
    ++launched;
    // At most two in flight: each holds a joined copy of its unit's gradients.
    if (i + 1 < units.size()) units[i + 1].work.wait();
  }
  void launch_ready(Gradients& grads) {
    while (next > 0 && units[next - 1].ready == int(units[next - 1].params.size())) {
      --next;
      launch(next, grads);
    }
  }
  static void on_leaf(void* ctx, const AutogradMeta* leaf, Gradients& grads) {
    auto& d = *static_cast<Impl*>(ctx);
    auto it = d.index.find(leaf);
    if (it == d.index.end()) return;
    auto [u, k] = it->second;
    if (d.final_[u][k]) return;
    d.final_[u][k] = 1;
    ++d.units[u].ready;
    d.launch_ready(grads);
    for (size_t j = d.next; j < d.units.size(); ++j) (void)d.units[j].work.is_completed();
  }
};

namespace {
Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t e = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = e;
    e *= std::max<int64_t>(s[i], 1);
  }
  return st;
}
}  // namespace

FullyShardedDataParallel::FullyShardedDataParallel(nn::Module& module, const FSDPOptions& o) {
  ProcessGroup& g = o.group ? *o.group : world();
  impl_ = std::make_unique<Impl>(module, g, o);
  Impl& d = *impl_;
  if (o.reduce != ReduceOp::Avg && o.reduce != ReduceOp::Sum)
    throw ValueError("[FullyShardedDataParallel] expected reduce = Avg or Sum, found Max or Min");
  // The units and their parameters' names (unit prefix + the unit's own names).
  std::vector<std::pair<std::string, nn::Module*>> chosen;
  if (o.units.empty()) {
    chosen = module.named_children();
  } else {
    for (nn::Module* m : o.units) {
      std::string name;
      for (auto& [n, sub] : module.named_modules())
        if (sub == m) name = n;
      if (name.empty() && m != &module)
        throw ValueError("[FullyShardedDataParallel] a unit is not a submodule of the module");
      chosen.emplace_back(name, m);
    }
  }
  std::unordered_map<const TensorImpl*, bool> taken;
  auto add_unit = [&](const std::vector<std::pair<std::string, Tensor>>& ps) {
    Impl::Unit u;
    for (auto& [n, p] : ps) {
      if (!p.requires_grad() || taken[p.impl()]) continue;
      taken[p.impl()] = true;
      u.names.push_back(n);
      u.params.push_back(p);
    }
    if (!u.params.empty()) d.units.push_back(std::move(u));
  };
  for (auto& [prefix, m] : chosen) {
    std::vector<std::pair<std::string, Tensor>> ps;
    for (auto& [n, p] : m->named_parameters()) ps.emplace_back(prefix.empty() ? n : prefix + "." + n, p);
    add_unit(ps);
  }
  add_unit(module.named_parameters());  // the root: what no unit holds
  NoGradGuard no_grad;
  {  // every rank starts from rank 0's values
    std::vector<Work> works;
    for (auto& u : d.units)
      for (Tensor& p : u.params) works.push_back(g.broadcast(p, 0));
    for (Work& w : works) w.wait();
  }
  const int64_t R = g.size();
  for (size_t i = 0; i < d.units.size(); ++i) {
    Impl::Unit& u = d.units[i];
    u.dtype = u.params[0].dtype();
    u.device = u.params[0].device().without_layers();
    for (size_t k = 0; k < u.params.size(); ++k) {
      const Tensor& p = u.params[k];
      if (p.dtype() != u.dtype || !p.device().same_place(u.device))
        throw ValueError("[FullyShardedDataParallel] a unit holds one dtype on one device: " +
                         u.names[k] + " is " + std::string(dtype_name(p.dtype())) + " on " +
                         p.device().str() + ", " + u.names[0] + " " +
                         std::string(dtype_name(u.dtype)) + " on " + u.device.str());
      u.offset.push_back(u.numel);
      u.numel += p.numel();
    }
    u.chunk = (u.numel + R - 1) / R;
    Tensor flat = zeros({R * u.chunk}, {u.dtype, u.device});
    for (size_t k = 0; k < u.params.size(); ++k)
      flat.narrow(0, u.offset[k], u.params[k].numel()).copy_(u.params[k].detach().reshape({-1}));
    u.shard = flat.narrow(0, g.rank() * u.chunk, u.chunk).clone();
    u.shard.requires_grad_(true);
    ember::detail::ready(flat);
    u.flat = flat.impl()->storage;
    for (size_t k = 0; k < u.params.size(); ++k) {  // the module's tensors become views of flat
      TensorImpl& t = *u.params[k].impl();
      t.storage = u.flat;
      t.offset = u.offset[k];
      t.strides = contiguous_strides(t.shape);
      t.refresh();
    }
    u.regather.d = &d;
    u.regather.unit = i;
    u.resident = true;
    u.last_gather = ++d.clock;
    d.gathered += d.unit_bytes(u);
    d.release(i);
  }
  d.peak = d.gathered = 0;
}

FullyShardedDataParallel::~FullyShardedDataParallel() {
  Impl& d = *impl_;
  d.opt.resident_units = int(d.units.size());
  for (size_t i = 0; i < d.units.size(); ++i) {
    Impl::Unit& u = d.units[i];
    try {
      if (!d.group.impl().failed()) d.gather(i);
    } catch (...) {
    }
    if (!u.resident) {  // a failed group: uninitialised memory rather than a dangling pointer
      Tensor blank = ember::detail::empty_tensor({d.group.size() * u.chunk}, u.dtype, u.device);
      swap_block(*u.flat, *blank.impl()->storage);
      u.flat->pending.store(nullptr);
    }
  }
}

Tensor FullyShardedDataParallel::forward(const Tensor& x) { return impl_->module.forward(x); }

Gradients FullyShardedDataParallel::backward(const Tensor& loss, const BackwardOptions& o) {
  Impl& d = *impl_;
  d.index.clear();
  d.final_.assign(d.units.size(), {});
  for (size_t i = 0; i < d.units.size(); ++i) {
    Impl::Unit& u = d.units[i];
    u.ready = 0;
    u.grad = Tensor();
    u.work = Work();
    d.final_[i].assign(u.params.size(), 0);
    for (size_t k = 0; k < u.params.size(); ++k)
      d.index[autodiff::leaf_key(u.params[k])] = {i, k};
  }
  d.next = d.units.size();
  d.launched = 0;
  // Leaves backward cannot reach are final at once (zeros), as in DDP.
  const auto reach = autodiff::reachable_leaves(loss);
  for (size_t i = 0; i < d.units.size(); ++i)
    for (size_t k = 0; k < d.units[i].params.size(); ++k)
      if (!reach.count(autodiff::leaf_key(d.units[i].params[k]))) {
        d.final_[i][k] = 1;
        ++d.units[i].ready;
      }
  Gradients grads;
  d.launch_ready(grads);
  BackwardOptions bo = o;
  bo.accumulate_into = nullptr;
  bo.accumulate_grad = false;  // full gradients must not stay in the parameters' slots
  {
    autodiff::ScopedLeafHook hook(&Impl::on_leaf, &d);
    grads = loss.backward(bo);
  }
  while (d.next > 0) {
    --d.next;
    d.launch(d.next, grads);
  }
  Gradients out;
  NoGradGuard no_grad;
  for (auto& u : d.units) {
    u.work.wait();
    out.set(u.shard, u.grad);
    if (o.accumulate_into) {
      Gradients& acc = *o.accumulate_into;
      Tensor prev = acc.contains(u.shard) ? acc.get(u.shard) : Tensor();
      acc.set(u.shard, prev.defined() ? add(prev, u.grad) : u.grad);
    }
    u.grad = Tensor();
    u.work = Work();
  }
  // The optimizer steps the shards next: the next read gathers them.
  for (size_t i = 0; i < d.units.size(); ++i) d.release(i);
  return out;
}

std::vector<Tensor> FullyShardedDataParallel::parameters() const {
  std::vector<Tensor> out;
  for (auto& u : impl_->units) out.push_back(u.shard);
  return out;
}
size_t FullyShardedDataParallel::num_units() const { return impl_->units.size(); }
std::vector<std::string> FullyShardedDataParallel::unit_parameters(size_t u) const {
  return impl_->units.at(u).names;
}

int64_t FullyShardedDataParallel::unit_numel(size_t u) const { return impl_->units.at(u).numel; }

std::vector<std::pair<std::string, Tensor>> FullyShardedDataParallel::state_dict() {
  NoGradGuard no_grad;
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [k, t] : impl_->module.state_dict()) out.emplace_back(k, t.detach().clone());
  return out;
}

void FullyShardedDataParallel::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd) {
  Impl& d = *impl_;
  NoGradGuard no_grad;
  std::unordered_map<std::string, Tensor> by_name(sd.begin(), sd.end());
  const int64_t R = d.group.size();
  for (size_t i = 0; i < d.units.size(); ++i) {
    Impl::Unit& u = d.units[i];
    Tensor full = zeros({R * u.chunk}, {u.dtype, u.device});
    for (size_t k = 0; k < u.params.size(); ++k) {
      auto it = by_name.find(u.names[k]);
      if (it == by_name.end())
        throw ValueError("[FullyShardedDataParallel] load_state_dict: no entry for " + u.names[k]);
      if (it->second.shape() != u.params[k].shape())
        throw ShapeError("[FullyShardedDataParallel] load_state_dict: expected " + u.names[k] +
                         " of shape " + shape_str(u.params[k].shape()) + ", found " +
                         shape_str(it->second.shape()));
      full.narrow(0, u.offset[k], u.params[k].numel())
          .copy_(it->second.detach().to(u.device).to(u.dtype).reshape({-1}));
    }
    u.shard.copy_(full.narrow(0, d.group.rank() * u.chunk, u.chunk));
    d.release(i);
  }
  for (auto& [n, b] : d.module.named_buffers())
    if (auto it = by_name.find(n); it != by_name.end()) b.copy_(it->second.to(b.device()).to(b.dtype()));
}

int64_t FullyShardedDataParallel::gathered_bytes() const { return impl_->gathered; }
int64_t FullyShardedDataParallel::peak_gathered_bytes() const { return impl_->peak; }
void FullyShardedDataParallel::reset_peak_gathered_bytes() { impl_->peak = impl_->gathered; }
int64_t FullyShardedDataParallel::shard_bytes() const {
  int64_t n = 0;
  for (auto& u : impl_->units) n += u.chunk * int64_t(itemsize(u.dtype));
  return n;
}
int64_t FullyShardedDataParallel::gathers() const { return impl_->n_gathers; }
ProcessGroup& FullyShardedDataParallel::group() { return impl_->group; }
nn::Module& FullyShardedDataParallel::module() { return impl_->module; }

}  // namespace ember::distributed

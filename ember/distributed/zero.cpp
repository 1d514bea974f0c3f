// ZeroRedundancyOptimizer: the parameters of one dtype and device form a flat space of N
// elements, cut into world_size ranges of ceil(N / world_size) (the last ones shorter or empty);
// a rank's slices are its range's pieces of the parameters it crosses. The slices are 1-d
// copies (leaves the wrapped optimizer steps in place); after the step every rank packs its
// range and one all-gather per space rebuilds every parameter.
#include "ember/distributed/zero.h"

#include <algorithm>
#include <set>

#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/tensor_impl.h"

namespace ember::distributed {

namespace {
// One flat space: the parameters of one dtype and device, in the order given.
struct Space {
  DType dtype;
  Device device;
  std::vector<size_t> params;
  std::vector<int64_t> offset;  // of each parameter in the space
  int64_t numel = 0, chunk = 0;
  std::vector<size_t> slices;   // this rank's slices in this space, in order
};
}  // namespace

struct ZeroRedundancyOptimizer::Impl {
  std::vector<Tensor> params;
  ProcessGroup* group = nullptr;
  std::vector<Space> spaces;
  std::vector<Slice> slices;
  std::vector<Tensor> shards;  // one per slice: what the wrapped optimizer steps
  std::unique_ptr<optim::Optimizer> local;
  int64_t local_numel = 0;
};

std::unique_ptr<ZeroRedundancyOptimizer::Impl> ZeroRedundancyOptimizer::build(
    std::vector<Tensor> params, const Make& make, ProcessGroup* group) {
  auto d = std::make_unique<Impl>();
  d->group = group ? group : &world();
  const int64_t R = d->group->size(), me = d->group->rank();
  std::set<const TensorImpl*> seen;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.defined())
      throw ValueError("[ZeroRedundancyOptimizer] expected defined parameters, found an "
                       "undefined one at " + std::to_string(i));
    if (!seen.insert(p.impl()).second)
      throw ValueError("[ZeroRedundancyOptimizer] parameter " + std::to_string(i) +
                       " is given twice");
    const Device dev = p.device().without_layers();
    auto it = std::find_if(d->spaces.begin(), d->spaces.end(), [&](const Space& s) {
      return s.dtype == p.dtype() && s.device.same_place(dev);
    });
    if (it == d->spaces.end()) it = d->spaces.insert(d->spaces.end(), Space{p.dtype(), dev});
    it->params.push_back(i);
    it->offset.push_back(it->numel);
    it->numel += p.numel();
  }
  NoGradGuard no_grad;
  std::vector<Tensor> mine;
  for (Space& s : d->spaces) {
    s.chunk = (s.numel + R - 1) / R;
    const int64_t lo = std::min(s.numel, me * s.chunk), hi = std::min(s.numel, lo + s.chunk);
    for (size_t k = 0; k < s.params.size(); ++k) {
      const size_t i = s.params[k];
      const int64_t b = std::max(lo, s.offset[k]);
      const int64_t e = std::min(hi, s.offset[k] + params[i].numel());
      if (b >= e) continue;
      s.slices.push_back(d->slices.size());
      d->slices.push_back({i, b - s.offset[k], e - b});
      Tensor shard = params[i].detach().reshape({-1}).narrow(0, b - s.offset[k], e - b).clone();
      shard.requires_grad_(true);
      d->shards.push_back(shard);
      mine.push_back(shard);
      d->local_numel += e - b;
    }
  }
  d->params = std::move(params);
  d->local = make(std::move(mine));
  if (!d->local || d->local->num_groups() != 1)
    throw ValueError("[ZeroRedundancyOptimizer] expected `make` to build an optimizer with one "
                     "parameter group over the slices it is given");
  return d;
}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params, const Make& make,
                                                 ProcessGroup* group)
    : ZeroRedundancyOptimizer(build(std::move(params), make, group)) {}
ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::unique_ptr<Impl> impl)
    : Optimizer(impl->local->name()), impl_(std::move(impl)) {}
ZeroRedundancyOptimizer::~ZeroRedundancyOptimizer() = default;

const std::vector<Tensor>& ZeroRedundancyOptimizer::params(size_t g) const {
  if (g != 0) fail("has one parameter group, asked for group " + std::to_string(g));
  return impl_->params;
}
double ZeroRedundancyOptimizer::lr(size_t g) const { return impl_->local->lr(g); }
void ZeroRedundancyOptimizer::set_lr(size_t g, double lr) { impl_->local->set_lr(g, lr); }
std::optional<double> ZeroRedundancyOptimizer::momentum(size_t g) const {
  return impl_->local->momentum(g);
}
void ZeroRedundancyOptimizer::set_momentum(size_t g, double m) { impl_->local->set_momentum(g, m); }
const std::vector<ZeroRedundancyOptimizer::Slice>& ZeroRedundancyOptimizer::slices() const {
  return impl_->slices;
}
int64_t ZeroRedundancyOptimizer::local_numel() const { return impl_->local_numel; }
optim::Optimizer& ZeroRedundancyOptimizer::local() { return *impl_->local; }
ProcessGroup& ZeroRedundancyOptimizer::group() const { return *impl_->group; }

namespace {
// This rank's range of space `s`: the given per-slice tensors (1-d) joined and padded to
// s.chunk elements.
Tensor pack(const Space& s, const std::vector<Tensor>& per_slice) {
  TensorList parts;
  int64_t n = 0;
  for (size_t k : s.slices) {
    parts.push_back(per_slice[k].to(s.dtype));
    n += per_slice[k].numel();
  }
  if (n < s.chunk) parts.push_back(zeros({s.chunk - n}, {s.dtype, s.device}));
  return parts.size() == 1 ? parts[0].contiguous() : cat(parts, 0);
}
}  // namespace

void ZeroRedundancyOptimizer::apply_gradients(const Gradients& grads) {
  Impl& d = *impl_;
  NoGradGuard no_grad;
  // The slices follow the parameters (a model's load_state_dict between steps is seen).
  Gradients mine;
  for (size_t k = 0; k < d.slices.size(); ++k) {
    const Slice& sl = d.slices[k];
    const Tensor& p = d.params[sl.param];
    d.shards[k].copy_(p.detach().reshape({-1}).narrow(0, sl.begin, sl.size));
    if (!grads.contains(p)) continue;
    Tensor g = grads.get(p);
    if (g.defined()) mine.set(d.shards[k], g.detach().reshape({-1}).narrow(0, sl.begin, sl.size));
  }
  d.local->step(mine);
  std::vector<Tensor> full;
  std::vector<Work> works;
  const int64_t R = d.group->size();
  for (const Space& s : d.spaces) {
    full.push_back(ember::detail::empty_tensor({R * s.chunk}, s.dtype, s.device));
    works.push_back(d.group->all_gather(full.back(), pack(s, d.shards)));
  }
  for (size_t j = 0; j < d.spaces.size(); ++j) {
    works[j].wait();
    const Space& s = d.spaces[j];
    for (size_t k = 0; k < s.params.size(); ++k) {
      Tensor& p = d.params[s.params[k]];
      p.copy_(full[j].narrow(0, s.offset[k], p.numel()).reshape(p.shape()));
    }
  }
}

optim::State ZeroRedundancyOptimizer::state_dict() const {
  const Impl& d = *impl_;
  const optim::State local = d.local->state_dict();
  const int64_t P = int64_t(d.params.size()), R = d.group->size();
  const Device dev = d.spaces.empty() ? Device::flex() : d.spaces[0].device;
  optim::State out;
  for (const auto& [k, v] : local.scalars)
    if (k.rfind("group.", 0) == 0) out.scalars[k] = v;
  if (auto init = initial_lr(0)) out.scalars["group.0.initial_lr"] = *init;
  // The buffer names of every rank (a rank whose slices were never stepped has none), and
  // each parameter's step count (its owners agree; a rank without a slice of it says 0).
  std::set<std::string> names;
  for (const auto& [k, t] : local.tensors) names.insert(k.substr(k.find('.', 6) + 1));
  std::string joined;
  for (const auto& n : names) joined += n + '\n';
  Tensor len = scalar_tensor(double(joined.size()), DType::I64, Device::flex()).to(dev);
  d.group->all_reduce(len, ReduceOp::Max).wait();
  const int64_t L = len.item<int64_t>();
  if (L > 0) {
    std::vector<uint8_t> bytes(size_t(L), 0);
    std::copy(joined.begin(), joined.end(), bytes.begin());
    Tensor mine = tensor(bytes, {L}, DType::U8, Device::flex()).to(dev);
    Tensor all = ember::detail::empty_tensor({R * L}, DType::U8, dev);
    d.group->all_gather(all, mine).wait();
    const std::vector<uint8_t> v = all.to_vector<uint8_t>();
    std::string cur;
    for (uint8_t c : v) {
      if (c == '\n') names.insert(cur);
      if (c == '\n' || c == 0) cur.clear();
      else cur += char(c);
    }
  }
  std::vector<double> step(size_t(P), 0.0);
  for (size_t k = 0; k < d.slices.size(); ++k)
    step[d.slices[k].param] = local.scalars.at("state." + std::to_string(k) + ".step");
  Tensor steps = tensor(step, {P}, DType::F64, Device::flex()).to(dev);
  if (P) d.group->all_reduce(steps, ReduceOp::Max).wait();
  step = steps.to_vector<double>();
  for (int64_t i = 0; i < P; ++i) out.scalars["state." + std::to_string(i) + ".step"] = step[size_t(i)];
  for (const std::string& name : names) {
    // Which parameters have this buffer (on the ranks that own them), then its values.
    std::vector<uint8_t> has(size_t(P), 0);
    std::vector<Tensor> per_slice(d.slices.size());
    for (size_t k = 0; k < d.slices.size(); ++k) {
      auto it = local.tensors.find("state." + std::to_string(k) + "." + name);
      if (it != local.tensors.end()) {
        has[d.slices[k].param] = 1;
        per_slice[k] = it->second.detach().reshape({-1});
      } else {
        per_slice[k] = zeros({d.slices[k].size}, {DType::F64, Device::flex()});
      }
    }
    Tensor any = tensor(has, {P}, DType::U8, Device::flex()).to(dev);
    if (P) d.group->all_reduce(any, ReduceOp::Max).wait();
    has = any.to_vector<uint8_t>();
    for (const Space& s : d.spaces) {
      std::vector<Tensor> on(per_slice.size());
      for (size_t k : s.slices) on[k] = per_slice[k].to(s.device);
      Tensor full = ember::detail::empty_tensor({R * s.chunk}, s.dtype, s.device);
      d.group->all_gather(full, pack(s, on)).wait();
      for (size_t k = 0; k < s.params.size(); ++k) {
        const size_t i = s.params[k];
        const Tensor& p = d.params[i];
        if (has[i])
          out.tensors["state." + std::to_string(i) + "." + name] =
              full.narrow(0, s.offset[k], p.numel()).reshape(p.shape()).clone();
      }
    }
  }
  return out;
}

void ZeroRedundancyOptimizer::load_state_dict(const optim::State& s) {
  const Impl& d = *impl_;
  auto index_of = [&](const std::string& key) -> std::pair<size_t, std::string> {
    size_t dot = key.find('.', 6);
    size_t i = 0;
    bool ok = key.rfind("state.", 0) == 0 && dot != std::string::npos && dot > 6 &&
              dot + 1 < key.size() && dot - 6 < 12;
    for (size_t c = 6; ok && c < dot; ++c) {
      ok = key[c] >= '0' && key[c] <= '9';
      i = i * 10 + size_t(key[c] - '0');
    }
    if (!ok || i >= d.params.size())
      fail("expected state for " + std::to_string(d.params.size()) + " parameters, found key " +
           key);
    return {i, key.substr(dot + 1)};
  };
  optim::State mine;
  for (const auto& [k, v] : s.scalars) {
    if (k.rfind("group.", 0) == 0) {
      if (k != "group.0.initial_lr") mine.scalars[k] = v;
      continue;
    }
    auto [i, name] = index_of(k);
    for (size_t j = 0; j < d.slices.size(); ++j)
      if (d.slices[j].param == i) mine.scalars["state." + std::to_string(j) + "." + name] = v;
  }
  for (const auto& [k, t] : s.tensors) {
    auto [i, name] = index_of(k);
    const Tensor& p = d.params[i];
    if (!t.defined() || t.shape() != p.shape())
      fail("expected " + k + " of shape " + shape_str(p.shape()) + ", found " +
           (t.defined() ? shape_str(t.shape()) : std::string("an undefined tensor")));
    for (size_t j = 0; j < d.slices.size(); ++j)
      if (d.slices[j].param == i)
        mine.tensors["state." + std::to_string(j) + "." + name] =
            t.detach().reshape({-1}).narrow(0, d.slices[j].begin, d.slices[j].size);
  }
  d.local->load_state_dict(mine);
  if (auto it = s.scalars.find("group.0.initial_lr"); it != s.scalars.end())
    set_initial_lr(0, it->second);
}

}  // namespace ember::distributed

#include "ember/rl/replay.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/error.h"

namespace ember::rl {
namespace {

Tensor rows(const std::vector<float>& src, std::span<const int64_t> idx, int64_t width, Device d) {
  std::vector<float> out(idx.size() * size_t(width));
  for (size_t b = 0; b < idx.size(); ++b)
    std::copy_n(src.begin() + idx[b] * width, width, out.begin() + int64_t(b) * width);
  Shape shape = width == 1 ? Shape{int64_t(idx.size())} : Shape{int64_t(idx.size()), width};
  return from_blob_copy(out.data(), DType::F32, shape, DType::F32, d);
}

template <class T> Tensor flat_tensor(const std::vector<T>& v) {
  return from_blob_copy(v.data(), dtype_v<T>, {int64_t(v.size())}, dtype_v<T>, Device::flex());
}

template <class T>
void load_flat(const optim::State& s, const std::string& key, std::vector<T>& into) {
  auto it = s.tensors.find(key);
  if (it == s.tensors.end())
    detail::throw_value("rl.ReplayBuffer.load_state_dict", "expected a tensor '" + key + "', found none");
  if (it->second.numel() != int64_t(into.size()))
    detail::throw_value("rl.ReplayBuffer.load_state_dict",
                        "expected '" + key + "' of " + std::to_string(into.size()) +
                            " values (the buffer's capacity), found " +
                            std::to_string(it->second.numel()));
  into = it->second.to_vector<T>();
}

double scalar_of(const optim::State& s, const std::string& key) {
  auto it = s.scalars.find(key);
  if (it == s.scalars.end())
    detail::throw_value("rl.ReplayBuffer.load_state_dict", "expected a scalar '" + key + "', found none");
  return it->second;
}

}  // namespace

ReplayBuffer::ReplayBuffer(ReplayOptions o) : o_(o) {
  if (o.capacity < 1 || o.obs_size < 1 || o.action_size < 1)
    detail::throw_value("rl.ReplayBuffer", "expected capacity, obs_size and action_size >= 1, found " +
                                               std::to_string(o.capacity) + ", " +
                                               std::to_string(o.obs_size) + ", " +
                                               std::to_string(o.action_size));
  const auto c = size_t(o.capacity);
  obs_.resize(c * size_t(o.obs_size));
  next_obs_.resize(c * size_t(o.obs_size));
  if (o.discrete) int_actions_.resize(c);
  else cont_actions_.resize(c * size_t(o.action_size));
  rewards_.resize(c);
  dones_.resize(c);
  discounts_.resize(c);
}

void ReplayBuffer::add(std::span<const float> obs, const Action& action, double reward,
                       std::span<const float> next_obs, bool terminated, double discount) {
  if (int64_t(obs.size()) != o_.obs_size || int64_t(next_obs.size()) != o_.obs_size)
    detail::throw_value("rl.ReplayBuffer.add",
                        "expected observations of " + std::to_string(o_.obs_size) +
                            " values, found " + std::to_string(obs.size()) + " and " +
                            std::to_string(next_obs.size()));
  const int64_t i = pos_;
  if (o_.discrete) {
    if (action.kind() != Action::Kind::Index)
      detail::throw_value("rl.ReplayBuffer.add", "expected a discrete action (an index), found " + action.str());
    int_actions_[size_t(i)] = action.index();
  } else {
    auto v = action.values();
    if (action.kind() != Action::Kind::Values || int64_t(v.size()) != o_.action_size)
      detail::throw_value("rl.ReplayBuffer.add", "expected " + std::to_string(o_.action_size) +
                                                     " action values, found " + action.str());
    std::copy(v.begin(), v.end(), cont_actions_.begin() + i * o_.action_size);
  }
  std::copy(obs.begin(), obs.end(), obs_.begin() + i * o_.obs_size);
  std::copy(next_obs.begin(), next_obs.end(), next_obs_.begin() + i * o_.obs_size);
  rewards_[size_t(i)] = float(reward);
  dones_[size_t(i)] = terminated ? 1.f : 0.f;
  discounts_[size_t(i)] = float(discount);
  pos_ = (pos_ + 1) % o_.capacity;
  size_ = std::min(size_ + 1, o_.capacity);
}

ReplayBatch ReplayBuffer::gather(std::span<const int64_t> idx, std::optional<Device> device) const {
  const Device d = resolve_device(device);
  for (int64_t i : idx)
    if (i < 0 || i >= size_)
      detail::throw_index("rl.ReplayBuffer.gather", "expected indices in [0, " + std::to_string(size_) +
                                                        "), found " + std::to_string(i));
  ReplayBatch b;
  b.obs = rows(obs_, idx, o_.obs_size, d);
  b.next_obs = rows(next_obs_, idx, o_.obs_size, d);
  if (o_.discrete) {
    std::vector<int64_t> a(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) a[k] = int_actions_[size_t(idx[k])];
    b.actions = from_blob_copy(a.data(), DType::I64, {int64_t(a.size())}, DType::I64, d);
  } else {
    b.actions = rows(cont_actions_, idx, o_.action_size, d);
    if (o_.action_size == 1) b.actions = b.actions.unsqueeze(1);
  }
  b.rewards = rows(rewards_, idx, 1, d);
  b.dones = rows(dones_, idx, 1, d);
  b.discounts = rows(discounts_, idx, 1, d);
  std::vector<float> ones(idx.size(), 1.f);
  b.weights = from_blob_copy(ones.data(), DType::F32, {int64_t(ones.size())}, DType::F32, d);
  b.indices.assign(idx.begin(), idx.end());
  return b;
}

ReplayBatch ReplayBuffer::sample(int64_t batch, Rng& rng, std::optional<Device> device) {
  if (size_ == 0) detail::throw_value("rl.ReplayBuffer.sample", "expected a non-empty buffer, found none added");
  if (batch < 1) detail::throw_value("rl.ReplayBuffer.sample", "expected batch >= 1, found " + std::to_string(batch));
  std::vector<int64_t> idx(static_cast<size_t>(batch));
  for (auto& i : idx) i = rng.integer(size_);
  return gather(idx, device);
}

optim::State ReplayBuffer::state_dict() const {
  optim::State s;
  s.tensors["obs"] = flat_tensor(obs_);
  s.tensors["next_obs"] = flat_tensor(next_obs_);
  if (o_.discrete) s.tensors["actions"] = flat_tensor(int_actions_);
  else s.tensors["actions"] = flat_tensor(cont_actions_);
  s.tensors["rewards"] = flat_tensor(rewards_);
  s.tensors["dones"] = flat_tensor(dones_);
  s.tensors["discounts"] = flat_tensor(discounts_);
  s.scalars["size"] = double(size_);
  s.scalars["pos"] = double(pos_);
  return s;
}

void ReplayBuffer::load_state_dict(const optim::State& s) {
  const double size = scalar_of(s, "size"), pos = scalar_of(s, "pos");
  if (!(size >= 0 && size <= double(o_.capacity) && pos >= 0 && pos < double(o_.capacity)))
    detail::throw_value("rl.ReplayBuffer.load_state_dict",
                        "expected size in [0, capacity] and pos in [0, capacity), found " +
                            std::to_string(size) + " and " + std::to_string(pos));
  auto obs = obs_, next_obs = next_obs_, ca = cont_actions_, r = rewards_, d = dones_, g = discounts_;
  auto ia = int_actions_;
  load_flat(s, "obs", obs);
  load_flat(s, "next_obs", next_obs);
  if (o_.discrete) load_flat(s, "actions", ia);
  else load_flat(s, "actions", ca);
  load_flat(s, "rewards", r);
  load_flat(s, "dones", d);
  load_flat(s, "discounts", g);
  obs_ = std::move(obs), next_obs_ = std::move(next_obs), cont_actions_ = std::move(ca);
  int_actions_ = std::move(ia), rewards_ = std::move(r), dones_ = std::move(d), discounts_ = std::move(g);
  size_ = int64_t(size), pos_ = int64_t(pos);
}

// --- SumTree ---
SumTree::SumTree(int64_t capacity) : capacity_(capacity), leaves_(1) {
  if (capacity < 1) detail::throw_value("rl.SumTree", "expected capacity >= 1, found " + std::to_string(capacity));
  while (leaves_ < capacity) leaves_ *= 2;
  sum_.assign(size_t(2 * leaves_), 0.0);
  min_.assign(size_t(2 * leaves_), std::numeric_limits<double>::infinity());
}

void SumTree::set(int64_t i, double v) {
  if (i < 0 || i >= capacity_ || !(v >= 0) || !std::isfinite(v))
    detail::throw_value("rl.SumTree.set", "expected a leaf in [0, " + std::to_string(capacity_) +
                                              ") and a finite priority >= 0, found leaf " +
                                              std::to_string(i) + " = " + std::to_string(v));
  size_t k = size_t(leaves_ + i);
  sum_[k] = v;
  min_[k] = v;
  for (k /= 2; k >= 1; k /= 2) {
    sum_[k] = sum_[2 * k] + sum_[2 * k + 1];
    min_[k] = std::min(min_[2 * k], min_[2 * k + 1]);
  }
}

int64_t SumTree::find(double mass) const {
  size_t k = 1;
  while (k < size_t(leaves_)) {
    if (mass < sum_[2 * k] || sum_[2 * k + 1] == 0) {
      k = 2 * k;
    } else {
      mass -= sum_[2 * k];
      k = 2 * k + 1;
    }
  }
  return std::min(int64_t(k) - leaves_, capacity_ - 1);
}

// --- PrioritizedReplayBuffer ---
PrioritizedReplayBuffer::PrioritizedReplayBuffer(ReplayOptions o, PrioritizedOptions p)
    : ReplayBuffer(o), p_(p), tree_(o.capacity) {
  if (!(p.alpha >= 0) || !(p.beta >= 0) || !(p.eps > 0))
    detail::throw_value("rl.PrioritizedReplayBuffer", "expected alpha >= 0, beta >= 0 and eps > 0");
}

void PrioritizedReplayBuffer::add(std::span<const float> obs, const Action& action, double reward,
                                  std::span<const float> next_obs, bool terminated, double discount) {
  const int64_t i = pos_;
  ReplayBuffer::add(obs, action, reward, next_obs, terminated, discount);
  tree_.set(i, std::pow(max_priority_, p_.alpha));
}

ReplayBatch PrioritizedReplayBuffer::sample(int64_t batch, Rng& rng, std::optional<Device> device) {
  if (size_ == 0) detail::throw_value("rl.PrioritizedReplayBuffer.sample", "expected a non-empty buffer, found none added");
  if (batch < 1) detail::throw_value("rl.PrioritizedReplayBuffer.sample", "expected batch >= 1, found " + std::to_string(batch));
  // Stratified: one draw in each of `batch` equal slices of the total priority.
  const double total = tree_.total(), seg = total / double(batch);
  std::vector<int64_t> idx(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    double mass = (double(b) + rng.uniform()) * seg;
    idx[size_t(b)] = std::min(tree_.find(std::min(mass, std::nextafter(total, 0.0))), size_ - 1);
  }
  ReplayBatch out = gather(idx, device);
  const double n = double(size_);
  const double max_w = std::pow(tree_.min() / total * n, -p_.beta);
  std::vector<float> w(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    w[size_t(b)] = float(std::pow(tree_.get(idx[size_t(b)]) / total * n, -p_.beta) / max_w);
  out.weights = from_blob_copy(w.data(), DType::F32, {batch}, DType::F32, resolve_device(device));
  return out;
}

void PrioritizedReplayBuffer::update_priorities(std::span<const int64_t> indices,
                                                std::span<const float> td_errors) {
  if (indices.size() != td_errors.size())
    detail::throw_value("rl.PrioritizedReplayBuffer.update_priorities",
                        "expected one TD error per index, found " + std::to_string(indices.size()) +
                            " indices and " + std::to_string(td_errors.size()) + " errors");
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] < 0 || indices[k] >= size_)
      detail::throw_index("rl.PrioritizedReplayBuffer.update_priorities",
                          "expected indices in [0, " + std::to_string(size_) + "), found " +
                              std::to_string(indices[k]));
    if (!std::isfinite(td_errors[k]))
      detail::throw_value("rl.PrioritizedReplayBuffer.update_priorities",
                          "expected finite TD errors, found " + std::to_string(td_errors[k]));
    const double p = std::abs(double(td_errors[k])) + p_.eps;
    max_priority_ = std::max(max_priority_, p);
    tree_.set(indices[k], std::pow(p, p_.alpha));
  }
}

optim::State PrioritizedReplayBuffer::state_dict() const {
  optim::State s = ReplayBuffer::state_dict();
  std::vector<double> pr(static_cast<size_t>(tree_.capacity()));
  for (int64_t i = 0; i < tree_.capacity(); ++i) pr[size_t(i)] = tree_.get(i);
  s.tensors["priorities"] = flat_tensor(pr);
  s.scalars["max_priority"] = max_priority_;
  s.scalars["beta"] = p_.beta;
  return s;
}

void PrioritizedReplayBuffer::load_state_dict(const optim::State& s) {
  std::vector<double> pr(static_cast<size_t>(tree_.capacity()));
  load_flat(s, "priorities", pr);
  const double mp = scalar_of(s, "max_priority"), beta = scalar_of(s, "beta");
  ReplayBuffer::load_state_dict(s);
  tree_ = SumTree(tree_.capacity());
  for (int64_t i = 0; i < size_; ++i) tree_.set(i, pr[size_t(i)]);
  max_priority_ = mp;
  p_.beta = beta;
}

// --- NStepCollector ---
NStepCollector::NStepCollector(int64_t n, double gamma, int64_t num_envs)
    : n_(n), gamma_(gamma), queues_(size_t(std::max<int64_t>(num_envs, 0))) {
  if (n < 1 || num_envs < 1 || !(gamma >= 0 && gamma <= 1))
    detail::throw_value("rl.NStepCollector", "expected n >= 1, num_envs >= 1 and gamma in [0, 1], found " +
                                                 std::to_string(n) + ", " + std::to_string(num_envs) +
                                                 " and " + std::to_string(gamma));
}

void NStepCollector::emit(std::deque<Pending>& q, std::span<const float> next_obs, bool terminated,
                          ReplayBuffer& out) {
  double ret = 0, g = 1;
  for (const Pending& p : q) {
    ret += g * p.reward;
    g *= gamma_;
  }
  const Pending& first = q.front();
  out.add(first.obs, first.action.view(), ret, next_obs, terminated, g);
  q.pop_front();
}

void NStepCollector::add(int64_t env, std::span<const float> obs, const Action& action,
                         double reward, std::span<const float> next_obs, bool terminated,
                         bool truncated, ReplayBuffer& out) {
  if (env < 0 || env >= int64_t(queues_.size()))
    detail::throw_index("rl.NStepCollector.add", "expected env in [0, " + std::to_string(queues_.size()) +
                                                     "), found " + std::to_string(env));
  auto& q = queues_[size_t(env)];
  Pending p{{obs.begin(), obs.end()}, {}, reward};
  p.action.kind = action.kind();
  p.action.index = action.index();
  auto ix = action.indices();
  p.action.indices.assign(ix.begin(), ix.end());
  auto v = action.values();
  p.action.values.assign(v.begin(), v.end());
  q.push_back(std::move(p));
  if (terminated || truncated) {
    while (!q.empty()) emit(q, next_obs, terminated, out);
  } else if (int64_t(q.size()) == n_) {
    emit(q, next_obs, false, out);
  }
}

optim::State NStepCollector::state_dict() const {
  optim::State s;
  for (size_t e = 0; e < queues_.size(); ++e) {
    const std::string pre = std::to_string(e) + ".";
    std::vector<float> obs, values;
    std::vector<double> rewards;
    std::vector<int64_t> index, indices, kinds;
    for (const Pending& p : queues_[e]) {
      obs.insert(obs.end(), p.obs.begin(), p.obs.end());
      values.insert(values.end(), p.action.values.begin(), p.action.values.end());
      indices.insert(indices.end(), p.action.indices.begin(), p.action.indices.end());
      rewards.push_back(p.reward);
      index.push_back(p.action.index);
      kinds.push_back(int64_t(p.action.kind));
    }
    s.tensors[pre + "obs"] = flat_tensor(obs);
    s.tensors[pre + "values"] = flat_tensor(values);
    s.tensors[pre + "indices"] = flat_tensor(indices);
    s.tensors[pre + "rewards"] = flat_tensor(rewards);
    s.tensors[pre + "index"] = flat_tensor(index);
    s.tensors[pre + "kind"] = flat_tensor(kinds);
  }
  return s;
}

void NStepCollector::load_state_dict(const optim::State& s) {
  std::vector<std::deque<Pending>> qs(queues_.size());
  for (size_t e = 0; e < queues_.size(); ++e) {
    const std::string pre = std::to_string(e) + ".";
    auto get = [&](const std::string& k) -> const Tensor& {
      auto it = s.tensors.find(pre + k);
      if (it == s.tensors.end())
        detail::throw_value("rl.NStepCollector.load_state_dict", "expected a tensor '" + pre + k + "', found none");
      return it->second;
    };
    auto obs = get("obs").to_vector<float>(), values = get("values").to_vector<float>();
    auto rewards = get("rewards").to_vector<double>();
    auto index = get("index").to_vector<int64_t>(), indices = get("indices").to_vector<int64_t>();
    auto kinds = get("kind").to_vector<int64_t>();
    const size_t n = rewards.size();
    if (n == 0) continue;
    if (obs.size() % n || values.size() % n || indices.size() % n || index.size() != n || kinds.size() != n)
      detail::throw_value("rl.NStepCollector.load_state_dict", "expected one row per pending transition");
    const size_t od = obs.size() / n, vd = values.size() / n, id = indices.size() / n;
    for (size_t k = 0; k < n; ++k) {
      Pending p{{obs.begin() + int64_t(k * od), obs.begin() + int64_t((k + 1) * od)}, {}, rewards[k]};
      p.action.kind = Action::Kind(kinds[k]);
      p.action.index = index[k];
      p.action.values.assign(values.begin() + int64_t(k * vd), values.begin() + int64_t((k + 1) * vd));
      p.action.indices.assign(indices.begin() + int64_t(k * id), indices.begin() + int64_t((k + 1) * id));
      qs[e].push_back(std::move(p));
    }
  }
  queues_ = std::move(qs);
}

}  // namespace ember::rl

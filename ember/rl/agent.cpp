#include "ember/rl/agent.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "ember/error.h"
#include "ember/ops/unary.h"
#include "ember/store/state.h"
#include "ember/train/metric_log.h"

namespace ember::rl {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Tensor f64_tensor(std::span<const double> v) {
  return from_blob_copy(v.data(), DType::F64, {int64_t(v.size())}, DType::F64, Device::flex());
}

}  // namespace

// --- MLP ---
MLP::MLP(const MLPOptions& o) : act_(o.activation), activate_last_(o.activate_last), out_(o.out) {
  if (o.in < 1 || o.out < 1)
    detail::throw_value("rl.MLP", "expected in and out >= 1, found " + std::to_string(o.in) + " and " +
                                      std::to_string(o.out));
  int64_t in = o.in;
  std::vector<int64_t> sizes = o.hidden;
  sizes.push_back(o.out);
  for (size_t i = 0; i < sizes.size(); ++i) {
    layers_.push_back(std::make_shared<nn::Linear>(nn::LinearOptions{.in = in, .out = sizes[i]}));
    register_module(std::to_string(i), layers_.back());
    in = sizes[i];
  }
}

Tensor MLP::forward(const Tensor& x) {
  Tensor h = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    h = (*layers_[i])(h);
    if (i + 1 < layers_.size() || activate_last_) h = act_ == Activation::ReLU ? relu(h) : tanh(h);
  }
  return h;
}

// --- Metrics ---
Metrics::Metrics(MetricsOptions o) : o_(std::move(o)) {
  if (o_.every < 1) detail::throw_value("rl.Metrics", "expected every >= 1, found " + std::to_string(o_.every));
}

void Metrics::start(int64_t total_steps, int64_t steps_done) {
  total_ = total_steps;
  last_steps_ = steps_done;
  record_start_ = now_s();
  if (o_.renderer) {
    train::FitInfo info;
    info.epochs = (total_steps + o_.every - 1) / o_.every;
    info.start_epoch = steps_done / o_.every + 1;
    info.train_steps = o_.every;
    info.history = history_;
    o_.renderer->on_fit_start(info);
  }
}

void Metrics::episode(double ret, int64_t length) {
  returns_.push_back(ret);
  lengths_.push_back(double(length));
  if (int64_t(returns_.size()) > o_.window) returns_.pop_front(), lengths_.pop_front();
  ++episodes_;
}

void Metrics::add(const std::string& name, double v) {
  for (auto& [k, s] : sums_)
    if (k == name) {
      s.first += v;
      ++s.second;
      return;
    }
  sums_.push_back({name, {v, 1}});
}

double Metrics::mean_return() const {
  if (returns_.empty()) return std::nan("");
  return std::accumulate(returns_.begin(), returns_.end(), 0.0) / double(returns_.size());
}

void Metrics::step(int64_t steps) {
  const int64_t before = last_steps_ / o_.every, after = steps / o_.every;
  const bool show = o_.renderer && steps / 1000 != last_steps_ / 1000;
  last_steps_ = steps;
  if (after > before) emit(steps);
  else if (show) {
    train::Progress p;
    p.epoch = after + 1;
    p.epochs = (total_ + o_.every - 1) / o_.every;
    p.step = steps % o_.every;
    p.steps = o_.every;
    p.elapsed_s = now_s() - record_start_;
    if (!returns_.empty()) p.metrics.push_back({"episode.return", mean_return()});
    o_.renderer->on_progress(p);
  }
}

void Metrics::emit(int64_t steps) {
  const double now = now_s();
  train::EpochRecord r;
  r.epoch = int64_t(history_.size()) + 1;
  r.seconds = now - record_start_;
  r.train.push_back({"steps", double(steps)});
  r.train.push_back({"episodes", double(episodes_)});
  r.train.push_back({"episode.return", mean_return()});
  r.train.push_back({"episode.length",
                     lengths_.empty() ? std::nan("")
                                      : std::accumulate(lengths_.begin(), lengths_.end(), 0.0) /
                                            double(lengths_.size())});
  for (const auto& [k, s] : sums_) r.train.push_back({k, s.first / double(s.second)});
  r.train.push_back({"fps", r.seconds > 0 ? double(steps - record_start_steps_) / r.seconds : 0.0});
  sums_.clear();
  history_.push_back(r);
  record_start_ = now;
  record_start_steps_ = steps;
  if (o_.renderer) o_.renderer->on_epoch_end(r);
  if (!o_.log.empty()) train::write_metric_log(o_.log, history_);
}

void Metrics::finish() {
  if (o_.renderer) o_.renderer->on_fit_end();
}

void Metrics::save(optim::State& s, store::Metadata& md) const {
  md["metrics.history"] = train::history_to_json(history_);
  std::vector<double> r(returns_.begin(), returns_.end()), l(lengths_.begin(), lengths_.end());
  s.tensors["metrics.returns"] = f64_tensor(r);
  s.tensors["metrics.lengths"] = f64_tensor(l);
  // Numbered, so that the keys' sorted order is the metrics' order.
  for (size_t i = 0; i < sums_.size(); ++i) {
    const double pair[2] = {sums_[i].second.first, double(sums_[i].second.second)};
    char num[24];
    std::snprintf(num, sizeof num, "%04zu.", i);
    s.tensors["metrics.sum." + std::string(num) + sums_[i].first] = f64_tensor(pair);
  }
  s.scalars["metrics.episodes"] = double(episodes_);
  s.scalars["metrics.record_start_steps"] = double(record_start_steps_);
}

void Metrics::load(const optim::State& s, const store::Metadata& md) {
  auto h = md.find("metrics.history");
  if (h == md.end()) detail::throw_value("rl.Metrics.load", "expected metrics.history metadata, found none");
  history_ = train::history_from_json(h->second);
  auto r = s.tensors.at("metrics.returns").to_vector<double>();
  auto l = s.tensors.at("metrics.lengths").to_vector<double>();
  returns_.assign(r.begin(), r.end());
  lengths_.assign(l.begin(), l.end());
  sums_.clear();
  const std::string pre = "metrics.sum.";
  for (const auto& [k, t] : s.tensors)
    if (k.rfind(pre, 0) == 0) {
      auto v = t.to_vector<double>();
      sums_.push_back({k.substr(pre.size() + 5), {v.at(0), int64_t(v.at(1))}});
    }
  episodes_ = int64_t(s.scalars.at("metrics.episodes"));
  record_start_steps_ = int64_t(s.scalars.at("metrics.record_start_steps"));
}

// --- evaluate ---
Evaluation evaluate(const EnvFactory& make, const Policy& policy, int64_t episodes, uint64_t seed) {
  if (episodes < 1) detail::throw_value("rl.evaluate", "expected episodes >= 1, found " + std::to_string(episodes));
  Evaluation e;
  auto env = make(0);
  for (int64_t k = 0; k < episodes; ++k) {
    ResetResult r = env->reset(seed + uint64_t(k));
    std::vector<float> obs(r.obs.begin(), r.obs.end());
    double ret = 0;
    for (;;) {
      ActionValue a = policy(obs);
      StepResult s = env->step(a.view());
      ret += s.reward;
      obs.assign(s.obs.begin(), s.obs.end());
      if (s.done()) break;
    }
    e.returns.push_back(ret);
  }
  e.mean = std::accumulate(e.returns.begin(), e.returns.end(), 0.0) / double(episodes);
  double v = 0;
  for (double x : e.returns) v += (x - e.mean) * (x - e.mean);
  e.stddev = std::sqrt(v / double(episodes));
  return e;
}

// --- EnvLoop ---
void EnvLoop::start(std::unique_ptr<Env> e, uint64_t seed) {
  env = std::move(e);
  ResetResult r = env->reset(seed);
  obs.assign(r.obs.begin(), r.obs.end());
}

void EnvLoop::step(const Action& a, Metrics& metrics, const std::function<void(const StepResult&)>& record) {
  StepResult r = env->step(a);
  record(r);
  episode_return += r.reward;
  ++episode_length;
  if (r.done()) {
    metrics.episode(episode_return, episode_length);
    episode_return = 0, episode_length = 0;
    ResetResult rr = env->reset();
    obs.assign(rr.obs.begin(), rr.obs.end());
  } else {
    obs.assign(r.obs.begin(), r.obs.end());
  }
}

void EnvLoop::save(Checkpoint& c) const {
  c.put_env("env", *env);
  c.put("obs", obs);
  c.put_scalar("episode.return", episode_return);
  c.put_scalar("episode.length", double(episode_length));
}

void EnvLoop::load(const Checkpoint& c) {
  c.get_env("env", *env);
  obs = c.get_floats("obs");
  episode_return = c.get_scalar("episode.return");
  episode_length = int64_t(c.get_scalar("episode.length"));
}

// --- BestSoFar ---
void BestSoFar::offer(double s, const nn::Module& m, const Tensor& extra_tensor) {
  if (s < score) return;
  score = s;
  params.clear();
  for (const auto& [k, t] : m.state_dict()) params.emplace_back(k, t.detach().clone());
  if (extra_tensor.defined()) extra = extra_tensor.detach().clone();
}

void BestSoFar::save(Checkpoint& c) const {
  c.put_scalar("best.score", score);
  for (const auto& [k, t] : params) c.state().tensors["best." + k] = t;
  if (extra.defined()) c.state().tensors["best_extra"] = extra;
}

void BestSoFar::load(const Checkpoint& c, const nn::Module& like) {
  score = c.get_scalar("best.score");
  params.clear();
  extra = Tensor();
  const auto sd = like.state_dict();
  if (sd.empty() || !c.has("best." + sd.front().first)) return;
  for (const auto& [k, t] : sd) params.emplace_back(k, c.tensor_at("best." + k));
  if (c.has("best_extra")) extra = c.tensor_at("best_extra");
}

// --- Checkpoint ---
void Checkpoint::put(const std::string& prefix, const nn::Module& m) {
  for (const auto& [k, t] : m.state_dict()) state_.tensors[prefix + "." + k] = t.detach().clone();
}

void Checkpoint::put(const std::string& prefix, const optim::Optimizer& o) { put(prefix, o.state_dict()); }

void Checkpoint::put(const std::string& prefix, const optim::State& s) {
  for (const auto& [k, t] : s.tensors) state_.tensors[prefix + "." + k] = t;
  for (const auto& [k, v] : s.scalars) state_.scalars[prefix + "." + k] = v;
}

void Checkpoint::put(const std::string& key, std::span<const float> v) {
  state_.tensors[key] = from_blob_copy(v.data(), DType::F32, {int64_t(v.size())}, DType::F32, Device::flex());
}

void Checkpoint::put_env(const std::string& prefix, const Env& e) {
  std::vector<double> s = e.state();
  state_.tensors[prefix + ".state"] = f64_tensor(s);
  put_word(prefix + ".rng", e.rng_state());
}

void Checkpoint::put_word(const std::string& key, uint64_t v) {
  int64_t w;
  std::memcpy(&w, &v, sizeof w);
  state_.tensors[key] = from_blob_copy(&w, DType::I64, {1}, DType::I64, Device::flex());
}

void Checkpoint::save(const std::string& path, const std::string& kind) const {
  store::Metadata md = md_;
  md["ember.kind"] = kind;
  store::save_state(path, state_, md);
}

Checkpoint Checkpoint::load(const std::string& path, const std::string& kind) {
  store::StateFile f = store::load_state(path);
  auto k = f.metadata.find("ember.kind");
  if (k == f.metadata.end() || k->second != kind)
    throw store::FormatError("[rl.Checkpoint] " + path + ": expected a checkpoint of kind \"" + kind +
                             "\", found " + (k == f.metadata.end() ? "none" : "\"" + k->second + "\""));
  Checkpoint c;
  c.state_ = std::move(f.state);
  c.md_ = std::move(f.metadata);
  c.path_ = path;
  return c;
}

const Tensor& Checkpoint::tensor_at(const std::string& key) const {
  auto it = state_.tensors.find(key);
  if (it == state_.tensors.end())
    throw store::FormatError("[rl.Checkpoint] " + path_ + ": expected a tensor \"" + key + "\", found none");
  return it->second;
}

void Checkpoint::get(const std::string& prefix, nn::Module& m) const {
  nn::StateDict sd;
  for (const auto& [k, t] : m.state_dict()) sd.emplace_back(k, tensor_at(prefix + "." + k));
  m.load_state_dict(sd);
}

void Checkpoint::get(const std::string& prefix, optim::Optimizer& o) const { o.load_state_dict(get_state(prefix)); }

optim::State Checkpoint::get_state(const std::string& prefix) const {
  optim::State s;
  const std::string pre = prefix + ".";
  for (const auto& [k, t] : state_.tensors)
    if (k.rfind(pre, 0) == 0) s.tensors[k.substr(pre.size())] = t;
  for (const auto& [k, v] : state_.scalars)
    if (k.rfind(pre, 0) == 0) s.scalars[k.substr(pre.size())] = v;
  return s;
}

std::vector<float> Checkpoint::get_floats(const std::string& key) const { return tensor_at(key).to_vector<float>(); }

void Checkpoint::get_env(const std::string& prefix, Env& e) const {
  std::vector<double> s = tensor_at(prefix + ".state").to_vector<double>();
  e.set_state(s);
  e.set_rng_state(get_word(prefix + ".rng"));
}

uint64_t Checkpoint::get_word(const std::string& key) const {
  int64_t w = tensor_at(key).item<int64_t>();
  uint64_t v;
  std::memcpy(&v, &w, sizeof v);
  return v;
}

double Checkpoint::get_scalar(const std::string& key) const {
  auto it = state_.scalars.find(key);
  if (it == state_.scalars.end())
    throw store::FormatError("[rl.Checkpoint] " + path_ + ": expected a scalar \"" + key + "\", found none");
  return it->second;
}

}  // namespace ember::rl

#pragma once
// What the agents (DQN, PPO, SAC) share: small networks, training metrics (episode return and
// length, losses, FPS) reported to the Learner's renderers and metric logs, greedy evaluation,
// and the checkpoint file that lets a run stop and continue bit for bit.
#include <chrono>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "ember/nn/layers.h"
#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"
#include "ember/rl/env.h"
#include "ember/rl/vector_env.h"
#include "ember/store/safetensors.h"
#include "ember/train/renderer.h"

namespace ember::rl {

enum class Activation { ReLU, Tanh };

struct MLPOptions {
  int64_t in = 0, out = 0;
  std::vector<int64_t> hidden = {64, 64};
  Activation activation = Activation::ReLU;
  /// Activation after the last layer too (a trunk for other heads).
  bool activate_last = false;
};

/// Linear layers with an activation between them; names "0", "1", ... as in nn.Sequential of
/// Linears (activations hold no parameters and take no name).
class MLP : public nn::Module {
 public:
  explicit MLP(const MLPOptions& o);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MLP"; }
  int64_t out_features() const { return out_; }

 private:
  std::vector<std::shared_ptr<nn::Linear>> layers_;
  Activation act_;
  bool activate_last_;
  int64_t out_;
};

/// Training metrics: each record (one "epoch" for the renderers and metric log) covers
/// `every` environment steps.
struct MetricsOptions {
  int64_t every = 10000;
  /// Shown the progress and each record; not owned (null: nothing shown).
  train::Renderer* renderer = nullptr;
  /// A metric log rewritten after each record (".csv" or ".jsonl"; empty: none).
  std::string log;
  /// Episodes the mean return and length average over.
  int64_t window = 100;
};

class Metrics {
 public:
  explicit Metrics(MetricsOptions o = {});
  void start(int64_t total_steps, int64_t steps_done);
  void episode(double ret, int64_t length);
  /// A value averaged over the current record ("loss", "entropy", ...).
  void add(const std::string& name, double v);
  /// `steps` environment steps are done in all; emits a record when it crosses a boundary.
  void step(int64_t steps);
  void finish();
  double mean_return() const;
  int64_t episodes() const { return episodes_; }
  const std::vector<train::EpochRecord>& history() const { return history_; }
  /// For checkpoints: the history, recent episodes and running sums as a State (prefix "metrics.").
  void save(optim::State& s, store::Metadata& md) const;
  void load(const optim::State& s, const store::Metadata& md);

 private:
  void emit(int64_t steps);
  MetricsOptions o_;
  std::vector<train::EpochRecord> history_;
  std::deque<double> returns_;
  std::deque<double> lengths_;
  std::vector<std::pair<std::string, std::pair<double, int64_t>>> sums_;
  int64_t episodes_ = 0, last_steps_ = 0, total_ = 0, record_start_steps_ = 0;
  double record_start_ = 0;
};

/// Mean return of `episodes` episodes of `policy` on fresh copies from `make` (episode k is
/// reset with seed + k), and the returns themselves.
struct Evaluation {
  double mean = 0, stddev = 0;
  std::vector<double> returns;
};
using Policy = std::function<ActionValue(std::span<const float> obs)>;
Evaluation evaluate(const EnvFactory& make, const Policy& policy, int64_t episodes, uint64_t seed);

class Checkpoint;

/// A single-environment agent's loop: the environment, the observation to act on, and the
/// running episode's return and length.
struct EnvLoop {
  std::unique_ptr<Env> env;
  std::vector<float> obs;
  double episode_return = 0;
  int64_t episode_length = 0;
  /// The first reset (with the agent's seed).
  void start(std::unique_ptr<Env> e, uint64_t seed);
  /// Steps with `a`; `record(r)` sees the step (r.obs is the next observation) before an ended
  /// episode is counted in `metrics` and the environment reset. obs then holds what to act on.
  void step(const Action& a, Metrics& metrics, const std::function<void(const StepResult&)>& record);
  void save(Checkpoint& c) const;
  void load(const Checkpoint& c);
};

/// The network that did best in the periodic evaluations (and an extra tensor, PPO's log std).
struct BestSoFar {
  double score = -1e300;
  nn::StateDict params;
  Tensor extra;
  /// Keeps a copy of `m` when `score` is at least the best so far.
  void offer(double s, const nn::Module& m, const Tensor& extra_tensor = {});
  bool empty() const { return params.empty(); }
  void save(Checkpoint& c) const;
  void load(const Checkpoint& c, const nn::Module& like);
};

/// Writes and reads the agents' checkpoint files: named tensors, exact scalars and metadata in
/// one safetensors file (ember::store's state format), written atomically.
class Checkpoint {
 public:
  void put(const std::string& prefix, const nn::Module& m);
  void put(const std::string& prefix, const optim::Optimizer& o);
  void put(const std::string& prefix, const optim::State& s);
  void put(const std::string& key, std::span<const float> v);
  void put_env(const std::string& prefix, const Env& e);
  void put_word(const std::string& key, uint64_t v);
  void put_scalar(const std::string& key, double v) { state_.scalars[key] = v; }
  void put(const Metrics& m) { m.save(state_, md_); }
  void save(const std::string& path, const std::string& kind) const;

  static Checkpoint load(const std::string& path, const std::string& kind);
  void get(const std::string& prefix, nn::Module& m) const;
  void get(const std::string& prefix, optim::Optimizer& o) const;
  optim::State get_state(const std::string& prefix) const;
  std::vector<float> get_floats(const std::string& key) const;
  void get_env(const std::string& prefix, Env& e) const;
  uint64_t get_word(const std::string& key) const;
  double get_scalar(const std::string& key) const;
  void get(Metrics& m) const { m.load(state_, md_); }
  bool has(const std::string& key) const { return state_.tensors.count(key) > 0; }
  const Tensor& tensor_at(const std::string& key) const;

  optim::State& state() { return state_; }
  store::Metadata& metadata() { return md_; }
  const store::Metadata& metadata() const { return md_; }

 private:
  optim::State state_;
  store::Metadata md_;
  std::string path_;
};

}  // namespace ember::rl

#pragma once
// VectorEnv: N copies of an environment stepped together, with auto-reset: when copy i's episode
// ends, its final observation is kept in final_obs and the copy restarts, so obs always holds
// observations to act on. Copies step in the caller's thread or on worker threads (the same
// results either way: each copy owns its generator).
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "ember/rl/env.h"

namespace ember::rl {

struct VectorEnvOptions {
  /// Worker threads that step the copies (0: the caller's thread).
  int64_t threads = 0;
};

/// One step of every copy (views into the VectorEnv, valid until its next step or reset).
struct VecStep {
  std::span<const float> obs;         // [num_envs, obs_size], after auto-reset
  std::span<const double> rewards;    // [num_envs]
  std::span<const uint8_t> terminated, truncated;
  std::span<const float> final_obs;   // [num_envs, obs_size]: the last observation where done
  std::span<const Info> infos;        // each copy's step info
  bool done(int64_t i) const { return terminated[size_t(i)] || truncated[size_t(i)]; }
};

using EnvFactory = std::function<std::unique_ptr<Env>(int64_t index)>;

class VectorEnv {
 public:
  /// `n` copies made by `make(0)`, ..., `make(n - 1)`; every copy must have the same spaces.
  VectorEnv(int64_t n, const EnvFactory& make, VectorEnvOptions o = {});
  explicit VectorEnv(std::vector<std::unique_ptr<Env>> envs, VectorEnvOptions o = {});
  ~VectorEnv();
  VectorEnv(const VectorEnv&) = delete;
  VectorEnv& operator=(const VectorEnv&) = delete;

  int64_t num_envs() const { return int64_t(envs_.size()); }
  const Space& single_observation_space() const { return envs_[0]->observation_space(); }
  const Space& single_action_space() const { return envs_[0]->action_space(); }
  int64_t obs_size() const { return obs_size_; }
  /// Resets every copy (copy i with seed + i when a seed is given); returns obs.
  std::span<const float> reset(std::optional<uint64_t> seed = {});
  /// Discrete actions: one index per copy; MultiDiscrete: obs-major rows of indices.
  const VecStep& step(std::span<const int64_t> actions);
  /// Box actions: [num_envs, action size] row-major.
  const VecStep& step(std::span<const float> actions);
  std::span<const float> obs() const { return obs_; }
  Env& env(int64_t i) { return *envs_.at(size_t(i)); }
  int64_t threads() const { return int64_t(workers_.size()); }

 private:
  enum class Job { Reset, Step };
  void check_spaces();
  void check_actions(size_t got, bool floats) const;
  void start_workers(int64_t threads);
  void run(Job job);
  void work(Job job, int64_t begin, int64_t end);
  void step_one(int64_t i);
  void reset_one(int64_t i);

  std::vector<std::unique_ptr<Env>> envs_;
  int64_t obs_size_ = 0, act_size_ = 0;
  std::vector<float> obs_, final_obs_;
  std::vector<double> rewards_;
  std::vector<uint8_t> terminated_, truncated_;
  std::vector<Info> infos_;
  VecStep result_;
  // the current job's inputs
  std::optional<uint64_t> seed_;
  const int64_t* int_actions_ = nullptr;
  const float* float_actions_ = nullptr;
  // workers
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  uint64_t generation_ = 0;
  int64_t pending_ = 0;
  Job job_ = Job::Step;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace ember::rl

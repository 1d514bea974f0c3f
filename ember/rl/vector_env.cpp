#include "ember/rl/vector_env.h"

#include <algorithm>

#include "ember/error.h"

namespace ember::rl {

VectorEnv::VectorEnv(int64_t n, const EnvFactory& make, VectorEnvOptions o) {
  if (n < 1) detail::throw_value("rl.VectorEnv", "expected num_envs >= 1, found " + std::to_string(n));
  for (int64_t i = 0; i < n; ++i) envs_.push_back(make(i));
  check_spaces();
  start_workers(o.threads);
}

VectorEnv::VectorEnv(std::vector<std::unique_ptr<Env>> envs, VectorEnvOptions o)
    : envs_(std::move(envs)) {
  if (envs_.empty()) detail::throw_value("rl.VectorEnv", "expected at least one environment, found none");
  check_spaces();
  start_workers(o.threads);
}

VectorEnv::~VectorEnv() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void VectorEnv::check_spaces() {
  for (size_t i = 0; i < envs_.size(); ++i) {
    if (!envs_[i]) detail::throw_value("rl.VectorEnv", "environment " + std::to_string(i) + " is null");
    if (!(envs_[i]->observation_space() == envs_[0]->observation_space()) ||
        !(envs_[i]->action_space() == envs_[0]->action_space()))
      detail::throw_value("rl.VectorEnv", "expected every copy to have the spaces of copy 0 (" +
                                              envs_[0]->observation_space().str() + ", " +
                                              envs_[0]->action_space().str() + "), found copy " +
                                              std::to_string(i) + " with " +
                                              envs_[i]->observation_space().str() + ", " +
                                              envs_[i]->action_space().str());
  }
  const size_t n = envs_.size();
  obs_size_ = single_observation_space().flat_size();
  act_size_ = single_action_space().flat_size();
  obs_.assign(n * size_t(obs_size_), 0.f);
  final_obs_.assign(n * size_t(obs_size_), 0.f);
  rewards_.assign(n, 0.0);
  terminated_.assign(n, 0);
  truncated_.assign(n, 0);
  infos_.assign(n, Info());
  result_ = {obs_, rewards_, terminated_, truncated_, final_obs_, infos_};
}

void VectorEnv::start_workers(int64_t threads) {
  if (threads < 0) detail::throw_value("rl.VectorEnv", "expected threads >= 0, found " + std::to_string(threads));
  threads = std::min<int64_t>(threads, num_envs());
  for (int64_t w = 0; w < threads; ++w) {
    const int64_t begin = w * num_envs() / threads, end = (w + 1) * num_envs() / threads;
    workers_.emplace_back([this, begin, end] {
      uint64_t seen = 0;
      while (true) {
        Job job;
        {
          std::unique_lock<std::mutex> lock(mu_);
          start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
          if (stop_) return;
          seen = generation_;
          job = job_;
        }
        std::exception_ptr err;
        try {
          work(job, begin, end);
        } catch (...) {
          err = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (err && !error_) error_ = err;
        if (--pending_ == 0) done_cv_.notify_one();
      }
    });
  }
}

void VectorEnv::run(Job job) {
  if (workers_.empty()) {
    work(job, 0, num_envs());
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  job_ = job;
  pending_ = int64_t(workers_.size());
  error_ = nullptr;
  ++generation_;
  start_cv_.notify_all();
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  if (error_) std::rethrow_exception(error_);
}

void VectorEnv::work(Job job, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) job == Job::Reset ? reset_one(i) : step_one(i);
}

void VectorEnv::reset_one(int64_t i) {
  std::optional<uint64_t> s;
  if (seed_) s = *seed_ + uint64_t(i);
  ResetResult r = envs_[size_t(i)]->reset(s);
  std::copy(r.obs.begin(), r.obs.end(), obs_.begin() + i * obs_size_);
  infos_[size_t(i)] = std::move(r.info);
}

void VectorEnv::step_one(int64_t i) {
  Env& env = *envs_[size_t(i)];
  const auto k = size_t(act_size_);
  StepResult r = [&] {
    if (float_actions_) return env.step(Action(std::span<const float>(float_actions_ + size_t(i) * k, k)));
    if (single_action_space().kind() == Space::Kind::Discrete) return env.step(Action(int_actions_[i]));
    return env.step(Action(std::span<const int64_t>(int_actions_ + size_t(i) * k, k)));
  }();
  rewards_[size_t(i)] = r.reward;
  terminated_[size_t(i)] = r.terminated;
  truncated_[size_t(i)] = r.truncated;
  float* row = obs_.data() + i * obs_size_;
  if (r.done()) {
    std::copy(r.obs.begin(), r.obs.end(), final_obs_.begin() + i * obs_size_);
    ResetResult rr = env.reset();
    std::copy(rr.obs.begin(), rr.obs.end(), row);
  } else {
    std::copy(r.obs.begin(), r.obs.end(), row);
  }
  infos_[size_t(i)] = std::move(r.info);
}

std::span<const float> VectorEnv::reset(std::optional<uint64_t> seed) {
  seed_ = seed;
  run(Job::Reset);
  std::fill(terminated_.begin(), terminated_.end(), 0);
  std::fill(truncated_.begin(), truncated_.end(), 0);
  return obs_;
}

// The actions one step needs: num_envs indices (Discrete), num_envs rows of indices
// (MultiDiscrete) or of floats (Box).
void VectorEnv::check_actions(size_t got, bool floats) const {
  const Space::Kind kind = single_action_space().kind();
  const bool box = kind == Space::Kind::Box;
  const size_t want = size_t(num_envs()) * (kind == Space::Kind::Discrete ? 1 : size_t(act_size_));
  if (box != floats || got != want)
    detail::throw_value("rl.VectorEnv.step",
                        "expected " + std::to_string(want) + " " + (box ? "float values" : "indices") +
                            " for " + std::to_string(num_envs()) + " copies of " +
                            single_action_space().str() + ", found " + std::to_string(got) + " " +
                            (floats ? "float values" : "indices"));
}

const VecStep& VectorEnv::step(std::span<const int64_t> actions) {
  check_actions(actions.size(), false);
  int_actions_ = actions.data();
  float_actions_ = nullptr;
  run(Job::Step);
  return result_;
}

const VecStep& VectorEnv::step(std::span<const float> actions) {
  check_actions(actions.size(), true);
  float_actions_ = actions.data();
  int_actions_ = nullptr;
  run(Job::Step);
  return result_;
}

}  // namespace ember::rl

// The scheduler base and the single-formula schedulers (torch 1.13's chainable get_lr forms).
#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ember/detail/decimal.h"
#include "ember/error.h"

namespace ember::optim {

namespace {
constexpr double kPi = std::numbers::pi;
// Python's a % b for b > 0 (never negative).
int64_t py_mod(int64_t a, int64_t b) { return ((a % b) + b) % b; }
}  // namespace

LRScheduler::LRScheduler(Optimizer& opt, std::string name) : opt_(opt), name_(std::move(name)) {
  for (size_t g = 0; g < opt.num_groups(); ++g) {
    if (!opt.initial_lr(g)) opt.set_initial_lr(g, opt.lr(g));
    base_lrs_.push_back(*opt.initial_lr(g));
  }
}

void LRScheduler::fail(const std::string& msg) const { detail::throw_value(name_.c_str(), msg); }

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> lrs;
  for (size_t g = 0; g < opt_.num_groups(); ++g) lrs.push_back(opt_.lr(g));
  return lrs;
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  for (size_t g = 0; g < lrs.size() && g < opt_.num_groups(); ++g) opt_.set_lr(g, lrs[g]);
  last_lr_ = group_lrs();
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply(get_lr());
}

void LRScheduler::step_to(int64_t epoch) {
  ++step_count_;
  last_epoch_ = epoch;
  auto closed = closed_form_lr();
  apply(closed ? *closed : get_lr());
}

State LRScheduler::state_dict() const {
  State s;
  s.scalars["last_epoch"] = double(last_epoch_);
  s.scalars["step_count"] = double(step_count_);
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    s.scalars["base_lr." + std::to_string(g)] = base_lrs_[g];
    s.scalars["last_lr." + std::to_string(g)] = last_lr_.at(g);
  }
  return s;
}

void LRScheduler::load_state_dict(const State& s) {
  auto get = [&](const std::string& key) {
    auto it = s.scalars.find(key);
    if (it == s.scalars.end()) fail("expected key " + key + " in the state, found none");
    return it->second;
  };
  std::vector<double> base(base_lrs_.size()), last(base_lrs_.size());
  for (size_t g = 0; g < base.size(); ++g) {
    base[g] = get("base_lr." + std::to_string(g));
    last[g] = get("last_lr." + std::to_string(g));
  }
  last_epoch_ = int64_t(get("last_epoch"));
  step_count_ = int64_t(get("step_count"));
  base_lrs_ = base;
  last_lr_ = last;
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : LRScheduler(opt, "StepLR"), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) fail("expected step_size > 0, found " + std::to_string(step_size));
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (auto& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() {
  auto lrs = base_lrs_;
  for (auto& lr : lrs) lr *= std::pow(gamma_, double(last_epoch_ / step_size_));
  return lrs;
}

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(opt, "MultiStepLR"), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  auto lrs = group_lrs();
  auto hits = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  for (auto& lr : lrs) lr *= std::pow(gamma_, double(hits));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() {
  auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) -
                milestones_.begin();
  auto lrs = base_lrs_;
  for (auto& lr : lrs) lr *= std::pow(gamma_, double(passed));
  return lrs;
}

ExponentialLR::ExponentialLR(Optimizer& opt, double gamma)
    : LRScheduler(opt, "ExponentialLR"), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (auto& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() {
  auto lrs = base_lrs_;
  for (auto& lr : lrs) lr *= std::pow(gamma_, double(last_epoch_));
  return lrs;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min)
    : LRScheduler(opt, "CosineAnnealingLR"), t_max_(t_max), eta_min_(eta_min) {
  if (t_max <= 0) fail("expected t_max > 0, found " + std::to_string(t_max));
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  auto lrs = group_lrs();
  double e = double(last_epoch_), t = double(t_max_);
  if (last_epoch_ == 0) return lrs;
  for (size_t g = 0; g < lrs.size(); ++g) {
    if (py_mod(last_epoch_ - 1 - t_max_, 2 * t_max_) == 0) {
      lrs[g] += (base_lrs_[g] - eta_min_) * (1 - std::cos(kPi / t)) / 2;
    } else {
      lrs[g] = (1 + std::cos(kPi * e / t)) / (1 + std::cos(kPi * (e - 1) / t)) *
                   (lrs[g] - eta_min_) + eta_min_;
    }
  }
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() {
  auto lrs = base_lrs_;
  for (auto& lr : lrs)
    lr = eta_min_ +
         (lr - eta_min_) * (1 + std::cos(kPi * double(last_epoch_) / double(t_max_))) / 2;
  return lrs;
}

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& opt, int64_t t_0,
                                                         int64_t t_mult, double eta_min)
    : LRScheduler(opt, "CosineAnnealingWarmRestarts"), t_0_(t_0), t_mult_(t_mult), t_i_(t_0),
      eta_min_(eta_min) {
  if (t_0 <= 0) fail("expected t_0 > 0, found " + std::to_string(t_0));
  if (t_mult < 1) fail("expected t_mult >= 1, found " + std::to_string(t_mult));
  initial_step();
}

void CosineAnnealingWarmRestarts::step() {
  ++step_count_;
  ++last_epoch_;
  ++t_cur_;
  if (t_cur_ >= t_i_) {
    t_cur_ -= t_i_;
    t_i_ *= t_mult_;
  }
  apply(get_lr());
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  auto lrs = base_lrs_;
  for (auto& lr : lrs)
    lr = eta_min_ + (lr - eta_min_) * (1 + std::cos(kPi * double(t_cur_) / double(t_i_))) / 2;
  return lrs;
}

State CosineAnnealingWarmRestarts::state_dict() const {
  State s = LRScheduler::state_dict();
  s.scalars["t_i"] = double(t_i_);
  s.scalars["t_cur"] = double(t_cur_);
  return s;
}

void CosineAnnealingWarmRestarts::load_state_dict(const State& s) {
  if (!s.scalars.count("t_i") || !s.scalars.count("t_cur"))
    fail("expected keys t_i and t_cur in the state, found none");
  LRScheduler::load_state_dict(s);
  t_i_ = int64_t(s.scalars.at("t_i"));
  t_cur_ = int64_t(s.scalars.at("t_cur"));
}

LinearLR::LinearLR(Optimizer& opt, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(opt, "LinearLR"), start_(start_factor), end_(end_factor), total_(total_iters) {
  if (!(start_factor > 0 && start_factor <= 1) || !(end_factor >= 0 && end_factor <= 1))
    fail("expected start_factor in (0, 1] and end_factor in [0, 1], found " +
         detail::exact_decimal(start_factor) + " and " +
         detail::exact_decimal(end_factor));
  if (total_iters <= 0) fail("expected total_iters > 0, found " + std::to_string(total_iters));
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  auto lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (auto& lr : lrs) lr *= start_;
  } else if (last_epoch_ <= total_) {
    double f = 1 + (end_ - start_) /
                       (double(total_) * start_ + double(last_epoch_ - 1) * (end_ - start_));
    for (auto& lr : lrs) lr *= f;
  }
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() {
  auto lrs = base_lrs_;
  double e = double(std::min(total_, last_epoch_));
  for (auto& lr : lrs) lr *= start_ + (end_ - start_) * e / double(total_);
  return lrs;
}

}  // namespace ember::optim

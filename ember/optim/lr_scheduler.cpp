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
// Counters in a loaded state are whole numbers up to 2^53 (exact in the double they travel as).
constexpr double kMaxStateCount = 9007199254740992.0;
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

// A NaN, infinite or negative factor would make every later lr NaN or negative.
void LRScheduler::check_gamma(double gamma) const {
  if (!(std::isfinite(gamma) && gamma >= 0))
    fail("expected a finite gamma >= 0, found " + detail::exact_decimal(gamma));
}

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

double LRScheduler::state_value(const State& s, const std::string& key) const {
  auto it = s.scalars.find(key);
  if (it == s.scalars.end()) fail("expected key " + key + " in the state, found none");
  return it->second;
}

int64_t LRScheduler::state_count(const State& s, const std::string& key, int64_t lo) const {
  double v = state_value(s, key);
  // Checked before the conversion: int64_t(NaN) or int64_t(1e300) is undefined behaviour.
  if (!(v >= double(lo) && v <= kMaxStateCount && v == std::floor(v)))
    fail("expected " + key + " a whole number in [" + std::to_string(lo) + ", 2^53], found " +
         detail::exact_decimal(v));
  return int64_t(v);
}

void LRScheduler::check_state(const State& s) const {
  for (size_t g = 0; g < base_lrs_.size(); ++g)
    for (const char* k : {"base_lr.", "last_lr."}) {
      std::string key = k + std::to_string(g);
      double v = state_value(s, key);
      if (!(std::isfinite(v) && v >= 0))
        fail("expected " + key + " finite and >= 0, found " + detail::exact_decimal(v));
    }
  state_count(s, "last_epoch", -1);
  state_count(s, "step_count", 0);
}

void LRScheduler::apply_state(const State& s) {
  last_lr_.resize(base_lrs_.size());
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    base_lrs_[g] = s.scalars.at("base_lr." + std::to_string(g));
    last_lr_.at(g) = s.scalars.at("last_lr." + std::to_string(g));
  }
  last_epoch_ = int64_t(s.scalars.at("last_epoch"));
  step_count_ = int64_t(s.scalars.at("step_count"));
}

void LRScheduler::load_state_dict(const State& s) {
  check_state(s);
  apply_state(s);
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : LRScheduler(opt, "StepLR"), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) fail("expected step_size > 0, found " + std::to_string(step_size));
  check_gamma(gamma);
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
  check_gamma(gamma);
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
  check_gamma(gamma);
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
    // Saturates rather than overflows (a period of 2^53 epochs is never reached anyway).
    if (__builtin_mul_overflow(t_i_, t_mult_, &t_i_) || t_i_ > int64_t(kMaxStateCount))
      t_i_ = int64_t(kMaxStateCount);
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

void CosineAnnealingWarmRestarts::check_state(const State& s) const {
  LRScheduler::check_state(s);
  int64_t t_i = state_count(s, "t_i", 1);  // t_i = 0 would divide by zero in get_lr
  int64_t t_cur = state_count(s, "t_cur", -1);
  if (t_cur >= t_i)
    fail("expected t_cur < t_i, found t_cur " + std::to_string(t_cur) + " and t_i " +
         std::to_string(t_i));
}

void CosineAnnealingWarmRestarts::apply_state(const State& s) {
  LRScheduler::apply_state(s);
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

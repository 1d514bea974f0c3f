// LambdaLR/Noam, OneCycleLR, and the composing schedulers (SequentialLR, ChainedScheduler).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "ember/detail/decimal.h"
#include "ember/error.h"
#include "ember/optim/lr_scheduler.h"

namespace ember::optim {

LambdaLR::LambdaLR(Optimizer& opt, std::function<double(int64_t)> f)
    : LambdaLR(opt, "LambdaLR", std::move(f)) {}

LambdaLR::LambdaLR(Optimizer& opt, std::string name, std::function<double(int64_t)> f)
    : LRScheduler(opt, std::move(name)), f_(std::move(f)) {
  if (!f_) fail("expected a function, found an empty one");
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  auto lrs = base_lrs_;
  double factor = f_(last_epoch_);
  for (auto& lr : lrs) lr *= factor;
  return lrs;
}

namespace {
std::function<double(int64_t)> noam(int64_t d_model, int64_t warmup, double factor) {
  return [=](int64_t epoch) {
    double s = double(std::max<int64_t>(epoch, 1));
    return factor * std::pow(double(d_model), -0.5) *
           std::min(std::pow(s, -0.5), s * std::pow(double(warmup), -1.5));
  };
}
}  // namespace

NoamLR::NoamLR(Optimizer& opt, int64_t d_model, int64_t warmup, double factor)
    : LambdaLR(opt, "NoamLR", noam(d_model, warmup, factor)) {
  if (d_model <= 0 || warmup <= 0)
    fail("expected d_model > 0 and warmup > 0, found " + std::to_string(d_model) + " and " +
         std::to_string(warmup));
}

OneCycleLR::OneCycleLR(Optimizer& opt, const OneCycleOptions& o)
    : LRScheduler(opt, "OneCycleLR"), o_(o) {
  if (o.total_steps <= 0) fail("expected total_steps > 0, found " + std::to_string(o.total_steps));
  if (!(o.pct_start >= 0 && o.pct_start <= 1))
    fail("expected pct_start in [0, 1], found " + detail::exact_decimal(o.pct_start));
  if (!(o.max_lr > 0) || !(o.div_factor > 0) || !(o.final_div_factor > 0))
    fail("expected max_lr, div_factor and final_div_factor > 0");
  double total = double(o.total_steps);
  if (o.three_phase) {
    phases_ = {{o.pct_start * total - 1, 0, 1, 0, 1},
               {2 * o.pct_start * total - 2, 1, 0, 1, 0},
               {total - 1, 0, 2, 0, 0}};
  } else {
    phases_ = {{o.pct_start * total - 1, 0, 1, 0, 1}, {total - 1, 1, 2, 1, 0}};
  }
  if (o.cycle_momentum) {
    for (size_t g = 0; g < opt.num_groups(); ++g) {
      if (!opt.momentum(g))
        fail("expected an optimizer with momentum or betas for cycle_momentum, found " +
             opt.name());
      opt.set_momentum(g, o.max_momentum);
    }
  }
  for (size_t g = 0; g < opt.num_groups(); ++g) {
    opt.set_initial_lr(g, o.max_lr / o.div_factor);
    base_lrs_[g] = o.max_lr / o.div_factor;
  }
  initial_step();
}

std::vector<double> OneCycleLR::get_lr() {
  if (last_epoch_ > o_.total_steps)
    fail("expected at most " + std::to_string(o_.total_steps) + " steps, found step " +
         std::to_string(last_epoch_ + 1));
  double initial = o_.max_lr / o_.div_factor;
  double levels[3] = {initial, o_.max_lr, initial / o_.final_div_factor};
  double momenta[2] = {o_.max_momentum, o_.base_momentum};
  auto anneal = [&](double a, double b, double pct) {
    return o_.cos_anneal ? b + (a - b) / 2.0 * (std::cos(std::numbers::pi * pct) + 1)
                         : (b - a) * pct + a;
  };
  double step = double(last_epoch_), start_step = 0, lr = 0, momentum = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& ph = phases_[i];
    if (step <= ph.end_step || i + 1 == phases_.size()) {
      double pct = (step - start_step) / (ph.end_step - start_step);
      lr = anneal(levels[ph.start], levels[ph.end], pct);
      momentum = anneal(momenta[ph.m_start], momenta[ph.m_end], pct);
      break;
    }
    start_step = ph.end_step;
  }
  if (o_.cycle_momentum)
    for (size_t g = 0; g < opt_.num_groups(); ++g) opt_.set_momentum(g, momentum);
  return std::vector<double>(opt_.num_groups(), lr);
}

SequentialLR::SequentialLR(Optimizer& opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(opt, "SequentialLR"), schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  if (schedulers_.empty()) fail("expected at least one scheduler, found none");
  if (milestones_.size() + 1 != schedulers_.size())
    fail("expected " + std::to_string(schedulers_.size() - 1) + " milestones, found " +
         std::to_string(milestones_.size()));
  for (const auto& s : schedulers_)
    if (!s || &s->opt_ != &opt) fail("expected schedulers of this optimizer");
  last_epoch_ = 0;
  // Like torch: undo the first step every scheduler took when built, then redo only the first's.
  for (size_t g = 0; g < opt.num_groups(); ++g) opt.set_lr(g, *opt.initial_lr(g));
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  size_t idx = size_t(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) -
                      milestones_.begin());
  auto& s = schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
    s->step_to(0);
  } else {
    s->step();
  }
  last_lr_ = s->get_last_lr();
}

State SequentialLR::state_dict() const {
  State s = LRScheduler::state_dict();
  for (size_t i = 0; i < schedulers_.size(); ++i)
    for (const auto& [k, v] : schedulers_[i]->state_dict().scalars)
      s.scalars["scheduler." + std::to_string(i) + "." + k] = v;
  return s;
}

namespace {
State sub_state(const State& s, size_t i) {
  State out;
  std::string prefix = "scheduler." + std::to_string(i) + ".";
  for (const auto& [k, v] : s.scalars)
    if (k.rfind(prefix, 0) == 0) out.scalars[k.substr(prefix.size())] = v;
  return out;
}
}  // namespace

// Composites check every part before changing any: a bad sub-state leaves all of them as they
// were.
void SequentialLR::check_state(const State& s) const {
  LRScheduler::check_state(s);
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->check_state(sub_state(s, i));
}

void SequentialLR::apply_state(const State& s) {
  LRScheduler::apply_state(s);
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->apply_state(sub_state(s, i));
}

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler(first_optimizer(schedulers), "ChainedScheduler"),
      schedulers_(std::move(schedulers)) {
  for (const auto& s : schedulers_)
    if (!s || &s->opt_ != &opt_) fail("expected schedulers of one optimizer");
  last_lr_ = schedulers_.back()->get_last_lr();
}

Optimizer& ChainedScheduler::first_optimizer(
    const std::vector<std::shared_ptr<LRScheduler>>& s) {
  if (s.empty() || !s[0])
    detail::throw_value("ChainedScheduler", "expected at least one scheduler, found none");
  return s[0]->opt_;
}

void ChainedScheduler::step() {
  for (auto& s : schedulers_) s->step();
  last_lr_ = schedulers_.back()->get_last_lr();
}

State ChainedScheduler::state_dict() const {
  State s;
  for (size_t i = 0; i < schedulers_.size(); ++i)
    for (const auto& [k, v] : schedulers_[i]->state_dict().scalars)
      s.scalars["scheduler." + std::to_string(i) + "." + k] = v;
  return s;
}

void ChainedScheduler::check_state(const State& s) const {
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->check_state(sub_state(s, i));
}

void ChainedScheduler::apply_state(const State& s) {
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->apply_state(sub_state(s, i));
  last_lr_ = schedulers_.back()->get_last_lr();
}

}  // namespace ember::optim

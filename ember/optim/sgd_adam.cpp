// SGD, Adam and AdamW, following torch 1.13's single-tensor implementations op for op so results
// match its goldens to rounding.
//
// Inside ember::capture (ember/graph.h) a step is recorded once and replayed: the scalars that
// change from step to step (the lr a scheduler sets, Adam's bias corrections) come from device
// memory that each replay sets from the options and step count it reads then, and the step
// count advances when a replay runs, not when the capture records it. The values are the eager
// step's, computed the same way in double and rounded once to f32.
#include <cmath>
#include <string>

#include "ember/detail/capture.h"
#include "ember/detail/text.h"
#include "ember/graph.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/optim/optimizers.h"

namespace ember::optim {

SGD::SGD(std::vector<Tensor> params, const SGDOptions& o) : OptimizerWith("SGD", o) {
  add_param_group(std::move(params));
}

void SGD::validate(const SGDOptions& o) const {
  check_non_negative("lr", o.lr);
  check_non_negative("momentum", o.momentum);
  check_non_negative("weight_decay", o.weight_decay);
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0)) {
    fail("expected momentum > 0 and dampening = 0 with nesterov, found momentum " +
         ember::detail::format_g(o.momentum) + " and dampening " +
         ember::detail::format_g(o.dampening));
  }
}

namespace {

// The capture in progress on p's device; CaptureError when the optimizer's state is not there
// yet (its first step creates it, and that step's work differs from the later ones').
detail::Capture* capture_for(const Tensor& p, const ParamState& s, bool needs_state,
                             const char* name) {
  detail::Capture* c = detail::capture_on(p.device());
  if (c && needs_state && s.buffers.empty())
    detail::throw_capture(name, "expected the optimizer's state inside ember::capture, found "
                                "none: run one step eagerly before capturing");
  return c;
}

}  // namespace

void SGD::update(const Tensor& p, const Tensor& grad, const SGDOptions& o, ParamState& s) {
  detail::Capture* cap = capture_for(p, s, o.momentum != 0, "SGD");
  Tensor d_p = o.maximize ? -grad : grad;
  if (o.weight_decay != 0) d_p = add(d_p, p, o.weight_decay);
  if (o.momentum != 0) {
    auto it = s.buffers.find("momentum_buffer");
    if (it == s.buffers.end()) {
      it = s.buffers.emplace("momentum_buffer", d_p.clone()).first;
    } else {
      it->second.mul_(o.momentum).add_(d_p, 1 - o.dampening);
    }
    d_p = o.nesterov ? add(d_p, it->second, o.momentum) : it->second;
  }
  if (cap) [[unlikely]] {
    ParamState* st = &s;
    const SGDOptions* opt = &o;  // the group's options: a replay reads the lr set then
    cap->on_replay([st] { st->step += 1; });
    Tensor(p).sub_(d_p * cap->replay_scalar(p.device(), [opt] { return opt->lr; }));
    return;
  }
  s.step += 1;
  Tensor(p).sub_(d_p, o.lr);
}

namespace {

// Shared by Adam and AdamW; `decoupled` selects AdamW's weight decay. `live` reads the group's
// options when a replay runs (inside ember::capture).
void adam_update(const Tensor& p, const Tensor& g, const AdamOptions& o, ParamState& s,
                 bool decoupled, std::function<AdamOptions()> live) {
  auto [beta1, beta2] = o.betas;
  detail::Capture* cap = capture_for(p, s, true, decoupled ? "AdamW" : "Adam");
  Tensor grad = o.maximize ? -g : g;
  if (s.buffers.empty()) {
    s.buffers["exp_avg"] = zeros_like(p);
    s.buffers["exp_avg_sq"] = zeros_like(p);
    if (o.amsgrad) s.buffers["max_exp_avg_sq"] = zeros_like(p);
  }
  // The per-step scalars: numbers eagerly, device tensors set by each replay inside a capture.
  struct Scalars {
    double step_size, bias_correction2_sqrt, decay;
  };
  auto scalars_at = [](const AdamOptions& a, int64_t step) {
    const double bias_correction1 = 1 - std::pow(a.betas.first, double(step));
    return Scalars{a.lr / bias_correction1, std::sqrt(1 - std::pow(a.betas.second, double(step))),
                   1 - a.lr * a.weight_decay};
  };
  Tensor step_size_t, bc2_t, decay_t;
  if (cap) [[unlikely]] {
    ParamState* st = &s;
    cap->on_replay([st] { st->step += 1; });
    step_size_t = cap->replay_scalar(p.device(), [=] { return scalars_at(live(), st->step).step_size; });
    bc2_t = cap->replay_scalar(
        p.device(), [=] { return scalars_at(live(), st->step).bias_correction2_sqrt; });
    if (decoupled)
      decay_t = cap->replay_scalar(p.device(), [=] { return scalars_at(live(), st->step).decay; });
  } else {
    s.step += 1;
  }
  Tensor param = p;
  if (decoupled) {
    if (cap) param.mul_(decay_t);
    else param.mul_(1 - o.lr * o.weight_decay);
  } else if (o.weight_decay != 0) {
    grad = add(grad, p, o.weight_decay);
  }
  Tensor& exp_avg = s.buffers["exp_avg"];
  Tensor& exp_avg_sq = s.buffers["exp_avg_sq"];
  exp_avg.mul_(beta1).add_(grad, 1 - beta1);
  exp_avg_sq.mul_(beta2).add_(grad * grad, 1 - beta2);
  const Scalars now = scalars_at(o, s.step);  // eager: the step just counted
  Tensor denom;
  Tensor sq = exp_avg_sq;
  if (o.amsgrad) {
    // amsgrad may be switched on after some steps: start its running max from exp_avg_sq.
    auto it = s.buffers.find("max_exp_avg_sq");
    if (it == s.buffers.end()) it = s.buffers.emplace("max_exp_avg_sq", zeros_like(p)).first;
    it->second.copy_(maximum(it->second, exp_avg_sq));
    sq = it->second;
  }
  if (cap) [[unlikely]] {
    denom = (sq.sqrt() / bc2_t) + o.eps;
    param.sub_((exp_avg / denom) * step_size_t);
    return;
  }
  denom = (sq.sqrt() / now.bias_correction2_sqrt) + o.eps;
  param.sub_(exp_avg / denom, now.step_size);
}

AdamOptions as_adam(const AdamWOptions& o) {
  return {o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad, o.maximize};
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o) : OptimizerWith("Adam", o) {
  add_param_group(std::move(params));
}

void Adam::validate(const AdamOptions& o) const {
  check_non_negative("lr", o.lr);
  check_non_negative("eps", o.eps);
  check_beta("betas.first", o.betas.first);
  check_beta("betas.second", o.betas.second);
  check_non_negative("weight_decay", o.weight_decay);
}

void Adam::update(const Tensor& p, const Tensor& g, const AdamOptions& o, ParamState& s) {
  adam_update(p, g, o, s, false, [po = &o] { return *po; });
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& o) : OptimizerWith("AdamW", o) {
  add_param_group(std::move(params));
}

void AdamW::validate(const AdamWOptions& o) const {
  AdamOptions a = as_adam(o);
  check_non_negative("lr", a.lr);
  check_non_negative("eps", a.eps);
  check_beta("betas.first", a.betas.first);
  check_beta("betas.second", a.betas.second);
  check_non_negative("weight_decay", a.weight_decay);
}

void AdamW::update(const Tensor& p, const Tensor& g, const AdamWOptions& o, ParamState& s) {
  adam_update(p, g, as_adam(o), s, true, [po = &o] { return as_adam(*po); });
}

}  // namespace ember::optim

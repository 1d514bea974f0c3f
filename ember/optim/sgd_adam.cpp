// SGD, Adam and AdamW, following torch 1.13's single-tensor implementations op for op so results
// match its goldens to rounding.
#include <cmath>
#include <sstream>

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
    std::ostringstream os;
    os << "expected momentum > 0 and dampening = 0 with nesterov, found momentum " << o.momentum
       << " and dampening " << o.dampening;
    fail(os.str());
  }
}

void SGD::update(const Tensor& p, const Tensor& grad, const SGDOptions& o, ParamState& s) {
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
  s.step += 1;
  Tensor(p).sub_(d_p, o.lr);
}

namespace {

// Shared by Adam and AdamW; `decoupled` selects AdamW's weight decay.
void adam_update(const Tensor& p, const Tensor& g, const AdamOptions& o, ParamState& s,
                 bool decoupled) {
  auto [beta1, beta2] = o.betas;
  Tensor grad = o.maximize ? -g : g;
  if (s.buffers.empty()) {
    s.buffers["exp_avg"] = zeros_like(p);
    s.buffers["exp_avg_sq"] = zeros_like(p);
    if (o.amsgrad) s.buffers["max_exp_avg_sq"] = zeros_like(p);
  }
  s.step += 1;
  Tensor param = p;
  if (decoupled) {
    param.mul_(1 - o.lr * o.weight_decay);
  } else if (o.weight_decay != 0) {
    grad = add(grad, p, o.weight_decay);
  }
  Tensor& exp_avg = s.buffers["exp_avg"];
  Tensor& exp_avg_sq = s.buffers["exp_avg_sq"];
  exp_avg.mul_(beta1).add_(grad, 1 - beta1);
  exp_avg_sq.mul_(beta2).add_(grad * grad, 1 - beta2);
  double step = double(s.step);
  double bias_correction1 = 1 - std::pow(beta1, step);
  double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, step));
  double step_size = o.lr / bias_correction1;
  Tensor denom;
  if (o.amsgrad) {
    // amsgrad may be switched on after some steps: start its running max from exp_avg_sq.
    auto it = s.buffers.find("max_exp_avg_sq");
    if (it == s.buffers.end()) it = s.buffers.emplace("max_exp_avg_sq", zeros_like(p)).first;
    it->second.copy_(maximum(it->second, exp_avg_sq));
    denom = (it->second.sqrt() / bias_correction2_sqrt) + o.eps;
  } else {
    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt) + o.eps;
  }
  param.sub_(exp_avg / denom, step_size);
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
  adam_update(p, g, o, s, false);
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
  adam_update(p, g, as_adam(o), s, true);
}

}  // namespace ember::optim

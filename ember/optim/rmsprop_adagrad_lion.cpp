// RMSprop and Adagrad (torch 1.13's single-tensor steps) and Lion (the paper's update).
#include <cmath>

#include "ember/detail/capture.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/unary.h"
#include "ember/optim/optimizers.h"

namespace ember::optim {

namespace {
// Their per-step scalars are not in device memory yet (SGD, Adam and AdamW replay; see
// sgd_adam.cpp): a captured step would repeat the first one's.
void no_capture(const Tensor& p, const char* name) {
  if (detail::capture_on(p.device()))
    detail::throw_capture(name, "a step inside ember::capture is not supported yet (SGD, Adam and "
                                "AdamW are); step it outside the captured function");
}
}  // namespace

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& o)
    : OptimizerWith("RMSprop", o) {
  add_param_group(std::move(params));
}

void RMSprop::validate(const RMSpropOptions& o) const {
  check_non_negative("lr", o.lr);
  check_non_negative("eps", o.eps);
  check_non_negative("momentum", o.momentum);
  check_non_negative("weight_decay", o.weight_decay);
  check_non_negative("alpha", o.alpha);
}

void RMSprop::update(const Tensor& p, const Tensor& g, const RMSpropOptions& o, ParamState& s) {
  no_capture(p, "RMSprop");
  Tensor grad = o.maximize ? -g : g;
  if (s.buffers.empty()) {
    s.buffers["square_avg"] = zeros_like(p);
    if (o.momentum > 0) s.buffers["momentum_buffer"] = zeros_like(p);
    if (o.centered) s.buffers["grad_avg"] = zeros_like(p);
  }
  s.step += 1;
  if (o.weight_decay != 0) grad = add(grad, p, o.weight_decay);
  Tensor& square_avg = s.buffers["square_avg"];
  square_avg.mul_(o.alpha).add_(grad * grad, 1 - o.alpha);
  Tensor avg;
  if (o.centered) {
    Tensor& grad_avg = s.buffers["grad_avg"];
    if (!grad_avg.defined()) grad_avg = zeros_like(p);
    grad_avg.mul_(o.alpha).add_(grad, 1 - o.alpha);
    avg = sub(square_avg, grad_avg * grad_avg).sqrt();
  } else {
    avg = square_avg.sqrt();
  }
  avg = avg + o.eps;
  Tensor param = p;
  if (o.momentum > 0) {
    Tensor& buf = s.buffers["momentum_buffer"];
    if (!buf.defined()) buf = zeros_like(p);
    buf.mul_(o.momentum).add_(grad / avg);
    param.sub_(buf, o.lr);
  } else {
    param.sub_(grad / avg, o.lr);
  }
}

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& o)
    : OptimizerWith("Adagrad", o) {
  add_param_group(std::move(params));
}

void Adagrad::validate(const AdagradOptions& o) const {
  check_non_negative("lr", o.lr);
  check_non_negative("lr_decay", o.lr_decay);
  check_non_negative("weight_decay", o.weight_decay);
  check_non_negative("initial_accumulator_value", o.initial_accumulator_value);
  check_non_negative("eps", o.eps);
}

void Adagrad::update(const Tensor& p, const Tensor& g, const AdagradOptions& o, ParamState& s) {
  no_capture(p, "Adagrad");
  // torch creates the sum when the optimizer is built; creating it at the first step is the
  // same as long as initial_accumulator_value is not changed in between.
  if (s.buffers.empty()) s.buffers["sum"] = full_like(p, o.initial_accumulator_value);
  s.step += 1;
  Tensor grad = o.maximize ? -g : g;
  if (o.weight_decay != 0) grad = add(grad, p, o.weight_decay);
  double clr = o.lr / (1 + double(s.step - 1) * o.lr_decay);
  Tensor& sum = s.buffers["sum"];
  sum.add_(grad * grad);
  Tensor std = sum.sqrt() + o.eps;
  Tensor(p).sub_(grad / std, clr);
}

Lion::Lion(std::vector<Tensor> params, const LionOptions& o) : OptimizerWith("Lion", o) {
  add_param_group(std::move(params));
}

void Lion::validate(const LionOptions& o) const {
  check_non_negative("lr", o.lr);
  check_beta("betas.first", o.betas.first);
  check_beta("betas.second", o.betas.second);
  check_non_negative("weight_decay", o.weight_decay);
}

void Lion::update(const Tensor& p, const Tensor& g, const LionOptions& o, ParamState& s) {
  no_capture(p, "Lion");
  auto [beta1, beta2] = o.betas;
  if (s.buffers.empty()) s.buffers["exp_avg"] = zeros_like(p);
  s.step += 1;
  Tensor& m = s.buffers["exp_avg"];
  Tensor direction = sign(add(m * beta1, g, 1 - beta1));
  Tensor param = p;
  param.sub_(add(direction, p, o.weight_decay), o.lr);
  m.mul_(beta2).add_(g, 1 - beta2);
}

}  // namespace ember::optim

#include "ember/optim/clip.h"

#include <cmath>
#include <sstream>

#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/layout.h"
#include "ember/ops/reduce.h"
#include "ember/ops/unary.h"

namespace ember::optim {

Tensor clip_grad_norm_on_device(Gradients& grads, const std::vector<Tensor>& params,
                                double max_norm, double norm_type) {
  if (!(max_norm >= 0) || std::isnan(norm_type)) {
    std::ostringstream os;
    os << "expected max_norm >= 0 and a norm_type, found " << max_norm << " and " << norm_type;
    detail::throw_value("clip_grad_norm", os.str());
  }
  NoGradGuard no_grad;
  std::vector<Tensor> held;
  for (const auto& p : params)
    if (grads.contains(p) && grads.get(p).defined()) held.push_back(p);
  if (held.empty()) return {};
  // Like torch: norm of each gradient, then the norm of those norms (in float64 here, so mixed
  // dtypes combine without a promotion question).
  TensorList norms;
  for (const auto& p : held) {
    Tensor g = grads.get(p).detach().to(kF64);
    norms.push_back(std::isinf(norm_type) ? amax(abs(g)).reshape({1})
                                          : norm(g, norm_type).reshape({1}));
  }
  Tensor all = cat(norms);
  Tensor total = std::isinf(norm_type) ? amax(all) : norm(all, norm_type);
  // torch's form: every gradient times min(1, max_norm / (total + 1e-6)) — a multiply by 1 when
  // nothing is clipped, so no branch reads the norm on the host.
  Tensor coef = clamp(max_norm / (total + 1e-6), std::nullopt, Scalar(1.0));
  for (const auto& p : held) {
    Tensor g = grads.get(p).detach();
    grads.set(p, g * coef.to(g.dtype()));
  }
  return total;
}

double clip_grad_norm(Gradients& grads, const std::vector<Tensor>& params, double max_norm,
                      double norm_type) {
  Tensor total = clip_grad_norm_on_device(grads, params, max_norm, norm_type);
  return total.defined() ? total.item<double>() : 0.0;
}

void clip_grad_value(Gradients& grads, const std::vector<Tensor>& params, double clip_value) {
  if (!(clip_value >= 0)) {
    std::ostringstream os;
    os << "expected clip_value >= 0, found " << clip_value;
    detail::throw_value("clip_grad_value", os.str());
  }
  NoGradGuard no_grad;
  for (const auto& p : params) {
    if (!grads.contains(p)) continue;
    Tensor g = grads.get(p);
    if (g.defined()) grads.set(p, clamp(g.detach(), -clip_value, clip_value));
  }
}

}  // namespace ember::optim

namespace ember::nn::utils {
namespace {
// The clipped gradients go back into the slots they came from.
void store_slots(const Gradients& grads, const std::vector<Tensor>& params) {
  for (const auto& p : params)
    if (grads.contains(p)) p.mutable_grad() = grads.get(p);
}
}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  Gradients grads = ember::detail::slot_gradients(params);
  double total = optim::clip_grad_norm(grads, params, max_norm, norm_type);
  store_slots(grads, params);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  Gradients grads = ember::detail::slot_gradients(params);
  optim::clip_grad_value(grads, params, clip_value);
  store_slots(grads, params);
}
}  // namespace ember::nn::utils

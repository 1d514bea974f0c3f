#include "ember/nn/loss.h"

#include <utility>

namespace ember::nn {

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, options);
}
Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, options);
}
Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return mse_loss(input, target, reduction);
}
Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  return l1_loss(input, target, reduction);
}
Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy(input, target, {}, reduction);
}
Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy_with_logits(input, target, {}, reduction);
}
Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  return smooth_l1_loss(input, target, reduction, beta);
}
Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return huber_loss(input, target, reduction, delta);
}
Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  return kl_div(input, target, reduction, log_target);
}

namespace {
// A copy keeps the options and the training flag (modules themselves are not copyable).
template <class M, class... Args>
std::shared_ptr<Module> copy_of(const M& m, Args&&... args) {
  auto c = std::make_shared<M>(std::forward<Args>(args)...);
  c->train(m.is_training());
  return c;
}
}  // namespace
std::shared_ptr<Module> CrossEntropyLoss::clone() const { return copy_of(*this, options); }
std::shared_ptr<Module> NLLLoss::clone() const { return copy_of(*this, options); }
std::shared_ptr<Module> MSELoss::clone() const { return copy_of(*this, reduction); }
std::shared_ptr<Module> L1Loss::clone() const { return copy_of(*this, reduction); }
std::shared_ptr<Module> BCELoss::clone() const { return copy_of(*this, reduction); }
std::shared_ptr<Module> BCEWithLogitsLoss::clone() const { return copy_of(*this, reduction); }
std::shared_ptr<Module> SmoothL1Loss::clone() const { return copy_of(*this, reduction, beta); }
std::shared_ptr<Module> HuberLoss::clone() const { return copy_of(*this, reduction, delta); }
std::shared_ptr<Module> KLDivLoss::clone() const {
  return copy_of(*this, reduction, log_target);
}

}  // namespace ember::nn

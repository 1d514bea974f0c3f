#pragma once
// The optimizers: SGD, Adam, AdamW, RMSprop, Adagrad, Lion. Each follows torch 1.13's
// single-tensor update step for step; see docs/training.md.
#include <utility>

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

/// Stochastic gradient descent with optional (Nesterov) momentum and L2 weight decay.
class SGD : public OptimizerWith<SGDOptions> {
 public:
  explicit SGD(std::vector<Tensor> params, const SGDOptions& o = {});
  /// libtorch's positional form: `SGD(params, lr)`, the other options at their defaults.
  SGD(std::vector<Tensor> params, double lr) : SGD(std::move(params), SGDOptions{.lr = lr}) {}

 protected:
  void validate(const SGDOptions& o) const override;
  void update(const Tensor& p, const Tensor& g, const SGDOptions& o, ParamState& s) override;
};

struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
};

/// Adam; weight_decay is L2 (added to the gradient).
class Adam : public OptimizerWith<AdamOptions> {
 public:
  explicit Adam(std::vector<Tensor> params, const AdamOptions& o = {});
  /// libtorch's positional form: `Adam(params, lr)`, the other options at their defaults.
  Adam(std::vector<Tensor> params, double lr) : Adam(std::move(params), AdamOptions{.lr = lr}) {}

 protected:
  void validate(const AdamOptions& o) const override;
  void update(const Tensor& p, const Tensor& g, const AdamOptions& o, ParamState& s) override;
};

/// AdamW's options: Adam's, with torch's default weight_decay of 1e-2.
struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
};

/// Adam with decoupled weight decay (p *= 1 - lr * weight_decay before the Adam step).
class AdamW : public OptimizerWith<AdamWOptions> {
 public:
  explicit AdamW(std::vector<Tensor> params, const AdamWOptions& o = {});
  /// libtorch's positional form: `AdamW(params, lr)`, the other options at their defaults.
  AdamW(std::vector<Tensor> params, double lr) : AdamW(std::move(params), AdamWOptions{.lr = lr}) {}

 protected:
  void validate(const AdamWOptions& o) const override;
  void update(const Tensor& p, const Tensor& g, const AdamWOptions& o, ParamState& s) override;
};

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;
};

/// RMSprop (optionally centered, with momentum).
class RMSprop : public OptimizerWith<RMSpropOptions> {
 public:
  explicit RMSprop(std::vector<Tensor> params, const RMSpropOptions& o = {});
  /// libtorch's positional form: `RMSprop(params, lr)`, the other options at their defaults.
  RMSprop(std::vector<Tensor> params, double lr) : RMSprop(std::move(params), RMSpropOptions{.lr = lr}) {}

 protected:
  void validate(const RMSpropOptions& o) const override;
  void update(const Tensor& p, const Tensor& g, const RMSpropOptions& o, ParamState& s) override;
};

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;
};

/// Adagrad: per-element steps shrink with the running sum of squared gradients.
class Adagrad : public OptimizerWith<AdagradOptions> {
 public:
  explicit Adagrad(std::vector<Tensor> params, const AdagradOptions& o = {});
  /// libtorch's positional form: `Adagrad(params, lr)`, the other options at their defaults.
  Adagrad(std::vector<Tensor> params, double lr) : Adagrad(std::move(params), AdagradOptions{.lr = lr}) {}

 protected:
  void validate(const AdagradOptions& o) const override;
  void update(const Tensor& p, const Tensor& g, const AdagradOptions& o, ParamState& s) override;
};

struct LionOptions {
  double lr = 1e-4;
  std::pair<double, double> betas = {0.9, 0.99};
  double weight_decay = 0;
};

/// Lion (Chen et al. 2023): sign of an interpolated momentum, decoupled weight decay.
class Lion : public OptimizerWith<LionOptions> {
 public:
  explicit Lion(std::vector<Tensor> params, const LionOptions& o = {});
  /// libtorch's positional form: `Lion(params, lr)`, the other options at their defaults.
  Lion(std::vector<Tensor> params, double lr) : Lion(std::move(params), LionOptions{.lr = lr}) {}

 protected:
  void validate(const LionOptions& o) const override;
  void update(const Tensor& p, const Tensor& g, const LionOptions& o, ParamState& s) override;
};

}  // namespace ember::optim

#pragma once
// The losses as modules, libtorch's torch::nn::CrossEntropyLoss and kin: `criterion(input,
// target)` calls the functional form (ember/ops/nn.h) with the options given at construction.
// They hold no parameters; a class weight given in the options stays where it is (to() does not
// move it).
#include <memory>
#include <string>
#include <utility>

#include "ember/nn/module.h"
#include "ember/ops/nn.h"

namespace ember::nn {

/// A module whose forward takes an input and a target.
class LossModule : public Module {
 public:
  EMBER_MODULE_ARROW(LossModule)
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
};

// cross_entropy and nll_loss with their options (weight, ignore_index, reduction, smoothing).
#define EMBER_LOSS_MODULE_OPTIONS(Name)                                                  \
  class Name : public LossModule {                                                       \
   public:                                                                               \
    explicit Name(CrossEntropyOptions o = {}) : options(std::move(o)) {}                 \
    Tensor forward(const Tensor& input, const Tensor& target) override;                  \
    std::shared_ptr<Module> clone() const override;                                      \
    const CrossEntropyOptions options;                                                   \
  };
EMBER_LOSS_MODULE_OPTIONS(CrossEntropyLoss)
EMBER_LOSS_MODULE_OPTIONS(NLLLoss)
#undef EMBER_LOSS_MODULE_OPTIONS

// Losses with a reduction ("mean", "sum" or "none") only. BCELoss takes probabilities in (0, 1),
// BCEWithLogitsLoss logits (the numerically stable form of sigmoid then BCELoss).
#define EMBER_LOSS_MODULE(Name)                                                          \
  class Name : public LossModule {                                                       \
   public:                                                                               \
    explicit Name(std::string reduction = "mean") : reduction(std::move(reduction)) {}   \
    Tensor forward(const Tensor& input, const Tensor& target) override;                  \
    std::shared_ptr<Module> clone() const override;                                      \
    const std::string reduction;                                                         \
  };
EMBER_LOSS_MODULE(MSELoss)
EMBER_LOSS_MODULE(L1Loss)
EMBER_LOSS_MODULE(BCELoss)
EMBER_LOSS_MODULE(BCEWithLogitsLoss)
#undef EMBER_LOSS_MODULE

// Losses with a reduction and one number more: SmoothL1Loss's beta (quadratic below it, linear
// above), HuberLoss's delta, and KLDivLoss's log_target (the target is log-probabilities too;
// the input always is).
#define EMBER_LOSS_MODULE_WITH(Name, Type, param, fallback)                              \
  class Name : public LossModule {                                                       \
   public:                                                                               \
    explicit Name(std::string reduction = "mean", Type param = fallback)                 \
        : reduction(std::move(reduction)), param(param) {}                               \
    Tensor forward(const Tensor& input, const Tensor& target) override;                  \
    std::shared_ptr<Module> clone() const override;                                      \
    const std::string reduction;                                                         \
    const Type param;                                                                    \
  };
EMBER_LOSS_MODULE_WITH(SmoothL1Loss, double, beta, 1.0)
EMBER_LOSS_MODULE_WITH(HuberLoss, double, delta, 1.0)
EMBER_LOSS_MODULE_WITH(KLDivLoss, bool, log_target, false)
#undef EMBER_LOSS_MODULE_WITH

}  // namespace ember::nn

#pragma once
// Shared by the optim tests: golden files and building optimizers/schedulers from their specs.
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizers.h"

namespace ember::test_optim {

using nlohmann::json;

inline json load_golden(const std::string& file) {
  std::ifstream in(std::string(EMBER_TEST_DATA) + "/optim/" + file);
  return json::parse(in);
}

template <class T>
void read(const json& j, const char* key, T& v) {
  if (j.contains(key)) v = j.at(key).get<T>();
}
inline void read(const json& j, const char* key, std::pair<double, double>& v) {
  if (j.contains(key)) v = {j.at(key)[0].get<double>(), j.at(key)[1].get<double>()};
}

inline optim::SGDOptions sgd_options(const json& j) {
  optim::SGDOptions o;
  read(j, "lr", o.lr), read(j, "momentum", o.momentum), read(j, "dampening", o.dampening);
  read(j, "weight_decay", o.weight_decay), read(j, "nesterov", o.nesterov);
  read(j, "maximize", o.maximize);
  return o;
}
template <class Options>
Options adam_options(const json& j, Options o) {
  read(j, "lr", o.lr), read(j, "betas", o.betas), read(j, "eps", o.eps);
  read(j, "weight_decay", o.weight_decay), read(j, "amsgrad", o.amsgrad);
  read(j, "maximize", o.maximize);
  return o;
}
inline optim::RMSpropOptions rmsprop_options(const json& j) {
  optim::RMSpropOptions o;
  read(j, "lr", o.lr), read(j, "alpha", o.alpha), read(j, "eps", o.eps);
  read(j, "weight_decay", o.weight_decay), read(j, "momentum", o.momentum);
  read(j, "centered", o.centered), read(j, "maximize", o.maximize);
  return o;
}
inline optim::AdagradOptions adagrad_options(const json& j) {
  optim::AdagradOptions o;
  read(j, "lr", o.lr), read(j, "lr_decay", o.lr_decay), read(j, "eps", o.eps);
  read(j, "weight_decay", o.weight_decay);
  read(j, "initial_accumulator_value", o.initial_accumulator_value);
  read(j, "maximize", o.maximize);
  return o;
}
inline optim::LionOptions lion_options(const json& j) {
  optim::LionOptions o;
  read(j, "lr", o.lr), read(j, "betas", o.betas), read(j, "weight_decay", o.weight_decay);
  return o;
}

/// Builds the optimizer `kind` over `params` grouped as the golden's "groups" say.
inline std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& kind,
                                                        const json& groups,
                                                        const std::vector<Tensor>& params) {
  auto pick = [&](const json& idx) {
    std::vector<Tensor> out;
    for (const auto& i : idx) out.push_back(params.at(i.get<size_t>()));
    return out;
  };
  auto build = [&]<class Opt>(Opt* tag, auto parse) -> std::unique_ptr<optim::Optimizer> {
    (void)tag;
    auto opt = std::make_unique<Opt>(pick(groups[0][0]), parse(groups[0][1]));
    for (size_t g = 1; g < groups.size(); ++g)
      opt->add_param_group(pick(groups[g][0]), parse(groups[g][1]));
    return opt;
  };
  if (kind == "SGD") return build((optim::SGD*)nullptr, sgd_options);
  if (kind == "Adam")
    return build((optim::Adam*)nullptr,
                 [](const json& j) { return adam_options(j, optim::AdamOptions{}); });
  if (kind == "AdamW")
    return build((optim::AdamW*)nullptr,
                 [](const json& j) { return adam_options(j, optim::AdamWOptions{}); });
  if (kind == "RMSprop") return build((optim::RMSprop*)nullptr, rmsprop_options);
  if (kind == "Adagrad") return build((optim::Adagrad*)nullptr, adagrad_options);
  if (kind == "Lion") return build((optim::Lion*)nullptr, lion_options);
  throw std::runtime_error("unknown optimizer " + kind);
}

/// Builds the scheduler a golden spec describes (recursively for the composing ones).
inline std::shared_ptr<optim::LRScheduler> make_scheduler(optim::Optimizer& opt,
                                                          const json& spec) {
  const std::string kind = spec.at("kind");
  const json& a = spec.at("args");
  using namespace optim;
  if (kind == "StepLR") return std::make_shared<StepLR>(opt, a["step_size"], a["gamma"]);
  if (kind == "MultiStepLR")
    return std::make_shared<MultiStepLR>(opt, a["milestones"].get<std::vector<int64_t>>(),
                                         a["gamma"]);
  if (kind == "ExponentialLR") return std::make_shared<ExponentialLR>(opt, a["gamma"]);
  if (kind == "CosineAnnealingLR")
    return std::make_shared<CosineAnnealingLR>(opt, a["t_max"], a["eta_min"]);
  if (kind == "CosineAnnealingWarmRestarts")
    return std::make_shared<CosineAnnealingWarmRestarts>(opt, a["t_0"], a["t_mult"],
                                                         a["eta_min"]);
  if (kind == "LinearLR")
    return std::make_shared<LinearLR>(opt, a["start_factor"], a["end_factor"],
                                      a["total_iters"]);
  if (kind == "NoamLR")
    return std::make_shared<NoamLR>(opt, a["d_model"], a["warmup"], a["factor"]);
  if (kind == "OneCycleLR")
    return std::make_shared<OneCycleLR>(
        opt, OneCycleOptions{.max_lr = a["max_lr"], .total_steps = a["total_steps"],
                             .pct_start = a["pct_start"], .cos_anneal = a["cos_anneal"],
                             .div_factor = a["div_factor"],
                             .final_div_factor = a["final_div_factor"],
                             .three_phase = a["three_phase"],
                             .cycle_momentum = a["cycle_momentum"],
                             .base_momentum = a["base_momentum"],
                             .max_momentum = a["max_momentum"]});
  std::vector<std::shared_ptr<LRScheduler>> subs;
  for (const auto& s : a["schedulers"]) subs.push_back(make_scheduler(opt, s));
  if (kind == "SequentialLR")
    return std::make_shared<SequentialLR>(opt, subs, a["milestones"].get<std::vector<int64_t>>());
  if (kind == "ChainedScheduler") return std::make_shared<ChainedScheduler>(subs);
  throw std::runtime_error("unknown scheduler " + kind);
}

}  // namespace ember::test_optim

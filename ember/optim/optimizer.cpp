#include "ember/optim/optimizer.h"

#include <cmath>
#include <set>
#include <string>

#include "ember/detail/text.h"
#include "ember/error.h"

namespace ember::optim {

std::vector<Tensor> Optimizer::all_params() const {
  std::vector<Tensor> out;
  for (size_t g = 0; g < num_groups(); ++g)
    for (const auto& p : params(g)) out.push_back(p);
  return out;
}

void Optimizer::step(const Gradients& grads) {
  apply_gradients(grads);
  // What backward() left in the slots is now stale: drop it (nothing is added there while the
  // slot is empty, so a loop of backward() and step(grads) never accumulates).
  for (size_t g = 0; g < num_groups(); ++g)
    for (const Tensor& p : params(g))
      if (p.grad().defined()) p.mutable_grad() = Tensor();
}

void Optimizer::step() { apply_gradients(detail::slot_gradients(all_params())); }

void Optimizer::zero_grad(bool set_to_none) {
  for (size_t g = 0; g < num_groups(); ++g)
    for (const Tensor& p : params(g)) detail::zero_grad_slot(p, set_to_none);
}

std::optional<double> Optimizer::initial_lr(size_t g) const {
  return g < initial_lr_.size() ? initial_lr_[g] : std::nullopt;
}

void Optimizer::set_initial_lr(size_t g, double lr) {
  if (initial_lr_.size() <= g) initial_lr_.resize(g + 1);
  initial_lr_[g] = lr;
}

std::vector<const ParamState*> Optimizer::param_states_const() const {
  auto states = const_cast<Optimizer*>(this)->param_states();
  return {states.begin(), states.end()};
}

void Optimizer::fail(const std::string& msg) const { detail::throw_value(name_.c_str(), msg); }

void Optimizer::check_non_negative(const char* what, double v) const {
  if (!(v >= 0)) {
    fail(std::string("expected ") + what + " >= 0, found " + ember::detail::format_g(v));
  }
}

void Optimizer::check_beta(const char* what, double v) const {
  if (!(v >= 0 && v < 1)) {
    fail(std::string("expected ") + what + " in [0, 1), found " + ember::detail::format_g(v));
  }
}

void Optimizer::check_new_params(const std::vector<Tensor>& params) const {
  std::set<const TensorImpl*> seen;
  for (const auto& p : all_params()) seen.insert(p.impl());
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.defined()) fail("expected defined parameters, found an undefined one at " +
                           std::to_string(i));
    if (!is_floating(p.dtype()))
      fail("expected floating-point parameters, found " + std::string(dtype_name(p.dtype())) +
           " at " + std::to_string(i));
    if (!seen.insert(p.impl()).second)
      fail("expected each parameter in one group once, found parameter " + std::to_string(i) +
           " again");
  }
}

State Optimizer::state_dict() const {
  State s;
  auto states = param_states_const();
  for (size_t i = 0; i < states.size(); ++i) {
    std::string key = "state." + std::to_string(i) + ".";
    s.scalars[key + "step"] = double(states[i]->step);
    for (const auto& [name, t] : states[i]->buffers) s.tensors[key + name] = t.detach().clone();
  }
  for (size_t g = 0; g < num_groups(); ++g) {
    std::string key = "group." + std::to_string(g) + ".";
    s.scalars[key + "lr"] = lr(g);
    if (auto m = momentum(g)) s.scalars[key + "momentum"] = *m;
    if (auto init = initial_lr(g)) s.scalars[key + "initial_lr"] = *init;
  }
  return s;
}

namespace {
// Step counts travel as doubles: whole numbers up to 2^53 are exact.
constexpr double kMaxStep = 9007199254740992.0;

std::string number(double v) { return ember::detail::format_g(v); }

// The parameter index and buffer name of a key "state.<i>.<name>"; nullopt when malformed.
std::optional<std::pair<size_t, std::string>> split_state_key(const std::string& key) {
  if (key.rfind("state.", 0) != 0) return std::nullopt;
  size_t dot = key.find('.', 6);
  if (dot == std::string::npos || dot == 6 || dot + 1 == key.size()) return std::nullopt;
  size_t i = 0;
  for (size_t k = 6; k < dot; ++k) {
    if (key[k] < '0' || key[k] > '9' || i > (size_t(1) << 40)) return std::nullopt;
    i = i * 10 + size_t(key[k] - '0');
  }
  return std::pair{i, key.substr(dot + 1)};
}
}  // namespace

void Optimizer::load_state_dict(const State& s) {
  auto states = param_states();
  auto params = all_params();
  // Check everything before changing anything, so a bad state leaves the optimizer as it was.
  std::vector<ParamState> loaded(states.size());
  auto bad_key = [&](const std::string& key) {
    fail("expected state for " + std::to_string(states.size()) + " parameters, found key " + key);
  };
  for (const auto& [key, v] : s.scalars) {
    if (key.rfind("group.", 0) == 0) continue;
    auto parts = split_state_key(key);
    if (!parts || parts->first >= states.size() || parts->second != "step") bad_key(key);
    // Checked before the conversion: int64_t(NaN) or int64_t(1e300) is undefined behaviour.
    if (!(v >= 0 && v <= kMaxStep && v == std::floor(v)))
      fail("expected " + key + " a whole number in [0, 2^53], found " + number(v));
    loaded[parts->first].step = int64_t(v);
  }
  for (const auto& [key, t] : s.tensors) {
    auto parts = split_state_key(key);
    if (!parts || parts->first >= states.size()) bad_key(key);
    size_t i = parts->first;
    if (!t.defined()) fail("expected a tensor for " + key + ", found an undefined one");
    if (t.shape() != params[i].shape())
      fail("expected " + key + " of shape " + shape_str(params[i].shape()) + ", found " +
           shape_str(t.shape()));
    loaded[i].buffers[parts->second] =
        t.detach().to(params[i].device()).to(params[i].dtype()).clone();
  }
  for (size_t g = 0; g < num_groups(); ++g) {
    std::string key = "group." + std::to_string(g) + ".";
    auto lr = s.scalars.find(key + "lr");
    if (lr == s.scalars.end())
      fail("expected " + std::to_string(num_groups()) + " groups, found no " + key + "lr");
    if (!std::isfinite(lr->second)) fail("expected a finite " + key + "lr, found " + number(lr->second));
    std::optional<double> m;
    if (auto it = s.scalars.find(key + "momentum"); it != s.scalars.end() && momentum(g))
      m = it->second;
    check_group_values(g, lr->second, m);  // the constructor's checks (lr >= 0, betas, ...)
    if (auto it = s.scalars.find(key + "initial_lr");
        it != s.scalars.end() && !(std::isfinite(it->second) && it->second >= 0))
      fail("expected " + key + "initial_lr finite and >= 0, found " + number(it->second));
  }
  for (size_t i = 0; i < states.size(); ++i) *states[i] = std::move(loaded[i]);
  for (size_t g = 0; g < num_groups(); ++g) {
    std::string key = "group." + std::to_string(g) + ".";
    set_lr(g, s.scalars.at(key + "lr"));
    if (auto it = s.scalars.find(key + "initial_lr"); it != s.scalars.end())
      set_initial_lr(g, it->second);
    if (auto it = s.scalars.find(key + "momentum"); it != s.scalars.end() && momentum(g))
      set_momentum(g, it->second);
  }
}

}  // namespace ember::optim

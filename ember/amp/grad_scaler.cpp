// GradScaler: dynamic loss scaling for f16 training, after torch.amp.GradScaler. The scale lives
// on the host; the inf/nan check is one device-side sum over every gradient, read once per step.
#include <cmath>
#include <sstream>

#include "ember/amp.h"
#include "ember/error.h"
#include "ember/ops/binary.h"
#include "ember/ops/layout.h"
#include "ember/ops/reduce.h"
#include "ember/optim/optimizer.h"

namespace ember::amp {

namespace {
[[noreturn]] void fail(const std::string& what, double v) {
  std::ostringstream os;
  os.precision(17);
  os << "expected " << what << ", found " << v;
  detail::throw_value("GradScaler", os.str());
}
bool positive_finite(double v) { return v > 0 && std::isfinite(v); }
}  // namespace

GradScaler::GradScaler(GradScalerOptions o) : options_(o), scale_(o.init_scale) {
  if (!positive_finite(o.init_scale)) fail("a positive finite init_scale", o.init_scale);
  if (!(o.growth_factor > 1) || !std::isfinite(o.growth_factor))
    fail("a growth_factor > 1", o.growth_factor);
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1))
    fail("a backoff_factor in (0, 1)", o.backoff_factor);
  if (o.growth_interval < 1) fail("a growth_interval >= 1", double(o.growth_interval));
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!loss.defined()) detail::throw_value("GradScaler::scale", "the loss is undefined");
  if (!options_.enabled) return loss;
  return loss * scale_;
}

template <class Get, class Set>
void GradScaler::unscale_with(const std::vector<Tensor>& params, const char* op, Get get,
                              Set set) {
  if (!options_.enabled) return;
  if (unscaled_)
    detail::throw_value(op, "unscale() already ran since the last update(): gradients would be "
                            "divided by the scale twice");
  NoGradGuard no_grad;
  const double inv = 1.0 / scale_;  // exact: the scale is a power of two unless set otherwise
  TensorList flags;
  for (const Tensor& p : params) {
    Tensor g = get(p);
    if (!g.defined()) continue;
    g = g.detach() * inv;
    set(p, g);
    // g * 0 is 0 for finite entries and NaN for inf and NaN, so one sum over all of them is
    // NaN exactly when some gradient is not finite (sums of f16 run in f32: see the layer).
    flags.push_back(sum(g * 0.0).to(DType::F32).reshape({1}));
  }
  found_ = flags.empty() ? Tensor() : sum(cat(flags));
  unscaled_ = true;
}

void GradScaler::unscale(Gradients& grads, const std::vector<Tensor>& params) {
  unscale_with(
      params, "GradScaler::unscale",
      [&](const Tensor& p) { return grads.contains(p) ? grads.get(p) : Tensor(); },
      [&](const Tensor& p, const Tensor& g) { grads.set(p, g); });
}

void GradScaler::unscale_(optim::Optimizer& opt) {
  unscale_with(
      opt.all_params(), "GradScaler::unscale_", [](const Tensor& p) { return p.grad(); },
      [](const Tensor& p, const Tensor& g) { p.mutable_grad() = g; });
}

bool GradScaler::read_finite() {
  // The one host sync of a step: whether to skip it is decided here.
  const bool finite = !found_.defined() || std::isfinite(found_.item<double>());
  if (!finite) ++skipped_;
  stepped_ = finite;
  return finite;
}

bool GradScaler::step(optim::Optimizer& opt, Gradients& grads) {
  if (!options_.enabled) {
    opt.step(grads);
    stepped_ = true;
    return true;
  }
  if (!unscaled_) unscale(grads, opt.all_params());
  const bool finite = read_finite();
  if (finite) opt.step(grads);
  return finite;
}

bool GradScaler::step(optim::Optimizer& opt) {
  if (!options_.enabled) {
    opt.step();
    stepped_ = true;
    return true;
  }
  if (!unscaled_) unscale_(opt);
  const bool finite = read_finite();
  if (finite) opt.step();
  return finite;
}

void GradScaler::update() {
  if (!stepped_)
    detail::throw_value("GradScaler::update", "expected a step() since the last update(), found none");
  if (options_.enabled) {
    if (!*stepped_) {
      scale_ *= options_.backoff_factor;
      tracker_ = 0;
    } else if (++tracker_ >= options_.growth_interval) {
      const double grown = scale_ * options_.growth_factor;
      if (std::isfinite(grown)) scale_ = grown;  // torch keeps the old scale on overflow too
      tracker_ = 0;
    }
  }
  stepped_.reset();
  unscaled_ = false;
  found_ = Tensor();
}

optim::State GradScaler::state_dict() const {
  optim::State s;
  s.scalars["scale"] = scale_;
  s.scalars["growth_tracker"] = double(tracker_);
  return s;
}

void GradScaler::load_state_dict(const optim::State& s) {
  auto get = [&](const char* k) {
    auto it = s.scalars.find(k);
    if (it == s.scalars.end())
      detail::throw_value("GradScaler", std::string("expected a state with \"") + k +
                                            "\", found none");
    return it->second;
  };
  const double sc = get("scale"), tr = get("growth_tracker");
  if (!positive_finite(sc)) fail("a positive finite scale in the state", sc);
  if (!(tr >= 0 && tr < double(options_.growth_interval) && tr == std::floor(tr)))
    fail("a growth_tracker in [0, growth_interval) in the state", tr);
  scale_ = sc;
  tracker_ = int64_t(tr);
  skipped_ = 0;
  stepped_.reset();
  unscaled_ = false;
  found_ = Tensor();
}

}  // namespace ember::amp

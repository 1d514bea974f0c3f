#include "ember/rl/space.h"

#include <cmath>
#include <sstream>

#include "ember/error.h"

namespace ember::rl {
namespace {

template <class T> std::string list_str(std::span<const T> v, size_t max = 8) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size() && i < max; ++i) os << (i ? ", " : "") << v[i];
  if (v.size() > max) os << ", ... (" << v.size() << " values)";
  os << "]";
  return os.str();
}

std::string kind_name(Action::Kind k) {
  switch (k) {
    case Action::Kind::Index: return "an index";
    case Action::Kind::Indices: return "indices";
    case Action::Kind::Values: return "values";
  }
  return "?";
}

}  // namespace

std::string Action::str() const {
  switch (kind_) {
    case Kind::Index: return std::to_string(index_);
    case Kind::Indices: return list_str(indices());
    case Kind::Values: return list_str(values());
  }
  return {};
}

Action ActionValue::view() const {
  switch (kind) {
    case Action::Kind::Index: return Action(index);
    case Action::Kind::Indices: return Action(std::span<const int64_t>(indices));
    case Action::Kind::Values: return Action(std::span<const float>(values));
  }
  return Action(index);
}

Box::Box(std::vector<float> low, std::vector<float> high, Shape shape) {
  kind_ = Kind::Box;
  if (shape.empty()) shape = {int64_t(low.size())};
  const int64_t n = numel_of(shape);
  if (low.size() != high.size() || int64_t(low.size()) != n)
    detail::throw_value("rl.Box", "expected low and high of " + std::to_string(n) +
                                      " values (shape " + shape_str(shape) + "), found " +
                                      std::to_string(low.size()) + " and " +
                                      std::to_string(high.size()));
  for (size_t i = 0; i < low.size(); ++i)
    if (!(low[i] <= high[i]))  // also refuses NaN
      detail::throw_value("rl.Box", "expected low <= high, found low[" + std::to_string(i) +
                                        "] = " + std::to_string(low[i]) + " and high = " +
                                        std::to_string(high[i]));
  shape_ = std::move(shape);
  low_ = std::move(low);
  high_ = std::move(high);
}

Box::Box(float low, float high, Shape shape)
    : Box(std::vector<float>(size_t(numel_of(shape)), low),
          std::vector<float>(size_t(numel_of(shape)), high), shape) {}

Discrete::Discrete(int64_t n, int64_t start) {
  if (n < 1) detail::throw_value("rl.Discrete", "expected n >= 1, found " + std::to_string(n));
  kind_ = Kind::Discrete;
  n_ = n;
  start_ = start;
}

MultiDiscrete::MultiDiscrete(std::vector<int64_t> nvec) {
  if (nvec.empty()) detail::throw_value("rl.MultiDiscrete", "expected at least one entry, found none");
  for (size_t i = 0; i < nvec.size(); ++i)
    if (nvec[i] < 1)
      detail::throw_value("rl.MultiDiscrete", "expected nvec[" + std::to_string(i) +
                                                  "] >= 1, found " + std::to_string(nvec[i]));
  kind_ = Kind::MultiDiscrete;
  shape_ = {int64_t(nvec.size())};
  nvec_ = std::move(nvec);
}

int64_t Space::flat_size() const {
  switch (kind_) {
    case Kind::Box: return int64_t(low_.size());
    case Kind::Discrete: return 1;
    case Kind::MultiDiscrete: return int64_t(nvec_.size());
  }
  return 0;
}

bool Space::bounded() const {
  for (size_t i = 0; i < low_.size(); ++i)
    if (!std::isfinite(low_[i]) || !std::isfinite(high_[i])) return false;
  return true;
}

ActionValue Space::sample(Rng& rng) const {
  ActionValue v;
  switch (kind_) {
    case Kind::Discrete:
      v.kind = Action::Kind::Index;
      v.index = start_ + rng.integer(n_);
      break;
    case Kind::MultiDiscrete:
      v.kind = Action::Kind::Indices;
      for (int64_t k : nvec_) v.indices.push_back(rng.integer(k));
      break;
    case Kind::Box:
      v.kind = Action::Kind::Values;
      v.values.resize(low_.size());
      for (size_t i = 0; i < low_.size(); ++i) {
        const bool lo = std::isfinite(low_[i]), hi = std::isfinite(high_[i]);
        double x;
        if (lo && hi) x = rng.uniform(low_[i], high_[i]);
        else if (lo) x = low_[i] - std::log1p(-rng.uniform());
        else if (hi) x = high_[i] + std::log1p(-rng.uniform());
        else x = rng.normal();
        float f = float(x);
        // Rounding to float32 may land just outside a bound.
        v.values[i] = std::min(std::max(f, low_[i]), high_[i]);
      }
      break;
  }
  return v;
}

bool Space::contains(const Action& a) const {
  switch (kind_) {
    case Kind::Discrete:
      return a.kind() == Action::Kind::Index && a.index() >= start_ && a.index() < start_ + n_;
    case Kind::MultiDiscrete: {
      auto ix = a.indices();
      if (a.kind() == Action::Kind::Values || ix.size() != nvec_.size()) return false;
      for (size_t i = 0; i < ix.size(); ++i)
        if (ix[i] < 0 || ix[i] >= nvec_[i]) return false;
      return true;
    }
    case Kind::Box:
      return a.kind() == Action::Kind::Values && contains(a.values());
  }
  return false;
}

bool Space::contains(std::span<const float> obs) const {
  switch (kind_) {
    case Kind::Discrete:
      return obs.size() == 1 && obs[0] == std::floor(obs[0]) && obs[0] >= float(start_) &&
             obs[0] < float(start_ + n_);
    case Kind::MultiDiscrete:
      if (obs.size() != nvec_.size()) return false;
      for (size_t i = 0; i < obs.size(); ++i)
        if (!(obs[i] >= 0 && obs[i] < float(nvec_[i]) && obs[i] == std::floor(obs[i]))) return false;
      return true;
    case Kind::Box:
      if (obs.size() != low_.size()) return false;
      for (size_t i = 0; i < obs.size(); ++i)
        if (!(obs[i] >= low_[i] && obs[i] <= high_[i])) return false;  // NaN is outside
      return true;
  }
  return false;
}

void Space::check(const Action& a, const char* op) const {
  if (contains(a)) return;
  std::string why;
  if (kind_ == Kind::Discrete && a.kind() == Action::Kind::Index)
    why = "index " + std::to_string(a.index()) + " is outside [" + std::to_string(start_) + ", " +
          std::to_string(start_ + n_) + ")";
  else if (kind_ == Kind::Box && a.kind() == Action::Kind::Values) {
    auto v = a.values();
    if (v.size() != low_.size()) {
      why = std::to_string(v.size()) + " values where " + std::to_string(low_.size()) + " are needed";
    } else {
      for (size_t i = 0; i < v.size(); ++i)
        if (!(v[i] >= low_[i] && v[i] <= high_[i])) {
          why = "value " + std::to_string(i) + " = " + std::to_string(v[i]) + " is outside [" +
                std::to_string(low_[i]) + ", " + std::to_string(high_[i]) + "]";
          break;
        }
    }
  } else if (kind_ == Kind::MultiDiscrete && a.kind() != Action::Kind::Values) {
    auto ix = a.indices();
    if (ix.size() != nvec_.size())
      why = std::to_string(ix.size()) + " indices where " + std::to_string(nvec_.size()) +
            " are needed";
    else
      for (size_t i = 0; i < ix.size(); ++i)
        if (ix[i] < 0 || ix[i] >= nvec_[i]) {
          why = "index " + std::to_string(i) + " = " + std::to_string(ix[i]) + " is outside [0, " +
                std::to_string(nvec_[i]) + ")";
          break;
        }
  } else {
    why = "an action of " + kind_name(a.kind()) + " does not fit this space";
  }
  detail::throw_value(op, "expected an action in " + str() + ", found " + a.str() + ": " + why);
}

void Space::check(std::span<const float> obs, const char* op) const {
  if (contains(obs)) return;
  std::string why;
  if (int64_t(obs.size()) != flat_size()) {
    why = std::to_string(obs.size()) + " values where " + std::to_string(flat_size()) +
          " are needed";
  } else {
    for (size_t i = 0; i < obs.size(); ++i) {
      float lo = kind_ == Kind::Box ? low_[i] : float(kind_ == Kind::Discrete ? start_ : 0);
      float hi = kind_ == Kind::Box ? high_[i]
                 : kind_ == Kind::Discrete ? float(start_ + n_ - 1)
                                           : float(nvec_[i] - 1);
      if (!(obs[i] >= lo && obs[i] <= hi) ||
          (kind_ != Kind::Box && obs[i] != std::floor(obs[i]))) {
        why = "value " + std::to_string(i) + " = " + std::to_string(obs[i]) + " is outside [" +
              std::to_string(lo) + ", " + std::to_string(hi) + "]" +
              (kind_ != Kind::Box ? " or not a whole number" : "");
        break;
      }
    }
  }
  detail::throw_value(op, "expected an observation in " + str() + ", found " +
                              list_str(obs) + ": " + why);
}

std::string Space::str() const {
  switch (kind_) {
    case Kind::Discrete:
      return "Discrete(" + std::to_string(n_) + (start_ ? ", start=" + std::to_string(start_) : "") +
             ")";
    case Kind::MultiDiscrete: return "MultiDiscrete(" + list_str(std::span<const int64_t>(nvec_)) + ")";
    case Kind::Box:
      return "Box(low=" + list_str(std::span<const float>(low_)) +
             ", high=" + list_str(std::span<const float>(high_)) + ", shape=" + shape_str(shape_) + ")";
  }
  return {};
}

}  // namespace ember::rl

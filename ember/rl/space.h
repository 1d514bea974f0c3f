#pragma once
// Observation and action spaces (Gymnasium's Box, Discrete, MultiDiscrete), and Action, the view
// of one action that Env::step takes. Observations are flat float32 vectors; a Discrete
// observation is one float holding the index.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "ember/error.h"  // the ValueError an invalid action throws
#include "ember/rl/rng.h"
#include "ember/shape.h"

namespace ember::rl {

/// One action: an index (Discrete), indices (MultiDiscrete) or values (Box). A view: the span
/// forms do not own their elements.
class Action {
 public:
  enum class Kind : uint8_t { Index, Indices, Values };
  Action(int64_t index) : kind_(Kind::Index), index_(index) {}  // NOLINT: implicit by design
  Action(int index) : Action(int64_t(index)) {}                  // NOLINT
  Action(std::span<const int64_t> indices)                       // NOLINT
      : kind_(Kind::Indices), ints_(indices.data()), n_(indices.size()) {}
  Action(const std::vector<int64_t>& indices) : Action(std::span<const int64_t>(indices)) {}  // NOLINT
  Action(std::span<const float> values)  // NOLINT
      : kind_(Kind::Values), floats_(values.data()), n_(values.size()) {}
  Action(const std::vector<float>& values) : Action(std::span<const float>(values)) {}  // NOLINT

  Kind kind() const { return kind_; }
  /// The index of a Discrete action.
  int64_t index() const { return index_; }
  /// The indices (an Index action is one of them).
  std::span<const int64_t> indices() const {
    return kind_ == Kind::Index ? std::span<const int64_t>(&index_, 1)
                                : std::span<const int64_t>(ints_, kind_ == Kind::Indices ? n_ : 0);
  }
  std::span<const float> values() const {
    return {floats_, kind_ == Kind::Values ? n_ : 0};
  }
  std::string str() const;

 private:
  Kind kind_;
  int64_t index_ = 0;
  const int64_t* ints_ = nullptr;
  const float* floats_ = nullptr;
  size_t n_ = 0;
};

/// A sampled or stored action that owns its elements.
struct ActionValue {
  int64_t index = 0;
  std::vector<int64_t> indices;
  std::vector<float> values;
  Action::Kind kind = Action::Kind::Index;
  Action view() const;
};

/// A set of observations or actions. A value type: Box, Discrete and MultiDiscrete build one.
class Space {
 public:
  enum class Kind : uint8_t { Box, Discrete, MultiDiscrete };
  Kind kind() const { return kind_; }
  /// Box: the shape of a value; Discrete: {} (one index); MultiDiscrete: {nvec.size()}.
  const Shape& shape() const { return shape_; }
  /// Floats of a flat observation (Box: numel, Discrete: 1, MultiDiscrete: nvec.size()).
  int64_t flat_size() const;
  /// Discrete: the number of choices.
  int64_t n() const { return n_; }
  /// Discrete: the first index (Gymnasium's `start`).
  int64_t start() const { return start_; }
  const std::vector<int64_t>& nvec() const { return nvec_; }
  const std::vector<float>& low() const { return low_; }
  const std::vector<float>& high() const { return high_; }
  /// Box: every bound finite.
  bool bounded() const;

  /// A random member (Box: uniform where bounded, normal or shifted exponential otherwise).
  ActionValue sample(Rng& rng) const;
  /// True when `a` is of this space's kind and size and inside its bounds.
  bool contains(const Action& a) const;
  /// True when the flat observation `obs` lies in the space.
  bool contains(std::span<const float> obs) const;
  /// Throws ValueError "[op] ..." naming the space, the action and what is wrong unless contains.
  void check(const Action& a, const char* op) const;
  void check(std::span<const float> obs, const char* op) const;
  std::string str() const;
  bool operator==(const Space& o) const = default;

 protected:
  Kind kind_ = Kind::Discrete;
  Shape shape_;
  int64_t n_ = 0, start_ = 0;
  std::vector<int64_t> nvec_;
  std::vector<float> low_, high_;
};

/// Values in [low, high] elementwise (float32; ±inf for unbounded), of shape `shape`.
struct Box : Space {
  Box(std::vector<float> low, std::vector<float> high, Shape shape = {});
  /// One bound for every element.
  Box(float low, float high, Shape shape);
};
/// Indices start, ..., start + n - 1.
struct Discrete : Space {
  explicit Discrete(int64_t n, int64_t start = 0);
};
/// One index per entry, entry i in [0, nvec[i]).
struct MultiDiscrete : Space {
  explicit MultiDiscrete(std::vector<int64_t> nvec);
};

}  // namespace ember::rl

#pragma once
// The fused-program generator of the property tests (tests/fusion/property_test.cpp, and the
// cuda tests that render and run the same programs): a seeded generator draws chains of the
// fusable ops (elementwise maths, comparisons, selects, casts, reductions and normalisations)
// over tensors of several dtypes, broadcast shapes and non-contiguous views.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::fusion_test {

struct Program {
  std::mt19937 rng;
  std::vector<Tensor> pool;     // values so far
  std::vector<Tensor> results;  // reductions' results
  std::string text;             // what the program did, for the failure message
  explicit Program(uint32_t seed) : rng(seed) {}
  size_t pick() { return std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng); }
  int roll(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
};

// Exact ops round once, as IEEE says (or not at all): fused and eager agree bitwise. Smooth ops
// are continuous but computed by polynomial approximations (exp, tanh, erf, ...) whose roundings
// depend on how the compiler contracted them (FMA) in each build: they agree within a few ulp.
// Step ops are exact but not continuous (floor, comparisons, casts to int): a few-ulp difference
// before one may change its result by a whole step, so they stay out of smooth programs.
enum Kind { Exact, Step, Smooth };
struct Unary {
  const char* name;
  Tensor (*f)(const Tensor&);
  Kind kind;
};
struct Binary {
  const char* name;
  Tensor (*f)(const Tensor&, const Tensor&);
  Kind kind;
};

inline const std::vector<Unary>& unary_ops() {
  static const std::vector<Unary> ops = {
      {"neg", [](const Tensor& x) { return neg(x); }, Exact},
      {"abs", [](const Tensor& x) { return abs(x); }, Exact},
      {"relu", [](const Tensor& x) { return relu(x); }, Exact},
      {"square", [](const Tensor& x) { return square(x); }, Exact},
      {"exp", [](const Tensor& x) { return exp(x); }, Smooth},
      {"log", [](const Tensor& x) { return log(abs(x) + 1); }, Smooth},
      {"sqrt", [](const Tensor& x) { return sqrt(abs(x)); }, Exact},
      {"tanh", [](const Tensor& x) { return tanh(x); }, Smooth},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, Smooth},
      {"gelu", [](const Tensor& x) { return gelu(x); }, Smooth},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, Smooth},
      {"silu", [](const Tensor& x) { return silu(x); }, Smooth},
      {"sin", [](const Tensor& x) { return sin(x); }, Smooth},
      {"floor", [](const Tensor& x) { return floor(x); }, Step},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }, Exact},
      {"clamp", [](const Tensor& x) { return clamp(x, Scalar(-0.5), Scalar(0.75)); }, Exact},
      {"scale", [](const Tensor& x) { return x * 0.5 + 2; }, Exact},
      {"to_f64", [](const Tensor& x) { return x.to(kF64); }, Exact},
      {"to_f32", [](const Tensor& x) { return x.to(kF32); }, Exact},
      {"to_i32", [](const Tensor& x) { return (x * 4).to(kI32); }, Step},
  };
  return ops;
}

inline const std::vector<Binary>& binary_ops() {
  static const std::vector<Binary> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, Exact},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, Exact},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, Exact},
      {"div", [](const Tensor& a, const Tensor& b) { return a / (abs(b) + 1); }, Exact},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, Exact},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, Exact},
      {"where", [](const Tensor& a, const Tensor& b) { return where(a > b, a, b * 2); }, Step},
      {"lt", [](const Tensor& a, const Tensor& b) { return (a < b).to(kF32) + a; }, Step},
  };
  return ops;
}

// Base tensors: [m, n] contiguous, a transposed view, rows and columns that broadcast, a 0-d
// tensor, in f32, f64 and i32.
inline Tensor base(Program& p, int64_t m, int64_t n, Device d) {
  const int kind = p.roll(6);
  const DType dt = p.roll(4) == 0 ? kF64 : p.roll(5) == 0 ? kI32 : kF32;
  Shape shape = kind == 0   ? Shape{m, n}
                : kind == 1 ? Shape{n, m}
                : kind == 2 ? Shape{1, n}
                : kind == 3 ? Shape{m, 1}
                : kind == 4 ? Shape{n}
                            : Shape{};
  Tensor t = randn(shape);  // drawn on flex: the same numbers for every device
  t = dt == kI32 ? (t * 8).to(kI32) : t.to(dt);
  t = t.to(d);
  if (kind == 1) t = t.t();  // a transposed, non-contiguous view
  p.text += " " + std::string(dtype_name(dt)) + shape_str(t.shape()) + (kind == 1 ? "(t)" : "");
  return t;
}

// One program, its values on `d`; returns what it produced (every value, in order).
template <class Op>
const Op& pick_op(Program& p, const std::vector<Op>& ops, bool smooth) {
  for (;;) {
    const Op& o = ops[size_t(p.roll(int(ops.size())))];
    if (smooth ? o.kind != Step : o.kind != Smooth) return o;
  }
}

// smooth: Exact and Smooth ops (and reductions); else Exact and Step ops.
inline std::vector<Tensor> run(uint32_t seed, Device d, bool smooth, std::string* text) {
  const bool reductions = smooth;
  manual_seed(seed);
  Program p(seed);
  const int64_t m = 1 + p.roll(40), n = 1 + p.roll(70);
  for (int i = 0; i < 3; ++i) p.pool.push_back(base(p, m, n, d));
  const int steps = 3 + p.roll(10);
  for (int s = 0; s < steps; ++s) {
    const int what = p.roll(reductions ? 12 : 10);
    if (what < 5) {
      const Unary& u = pick_op(p, unary_ops(), smooth);
      const size_t a = p.pick();
      p.text += std::string(" ") + u.name + "(v" + std::to_string(a) + ")";
      p.pool.push_back(u.f(p.pool[a]));
    } else if (what < 10) {
      const Binary& b = pick_op(p, binary_ops(), smooth);
      const size_t x = p.pick(), y = p.pick();
      p.text +=
          std::string(" ") + b.name + "(v" + std::to_string(x) + ",v" + std::to_string(y) + ")";
      p.pool.push_back(b.f(p.pool[x], p.pool[y]));
    } else {
      Tensor x = p.pool[p.pick()];
      if (!is_floating(x.dtype())) x = x.to(kF32);
      const int r = p.roll(6);
      const int64_t dim = x.dim() ? p.roll(int(x.dim())) : 0;
      p.text += " reduce" + std::to_string(r);
      // Reduced results end the program's use of them (their shapes no longer broadcast);
      // softmax and layer_norm keep the shape and go back into the pool.
      if (x.dim() == 0 || x.numel() == 0)
        p.results.push_back(x.sum());
      else if (r == 0)
        p.results.push_back(x.sum());
      else if (r == 1)
        p.results.push_back(sum(x, {dim}, p.roll(2) == 0));
      else if (r == 2)
        p.results.push_back(amax(x, {dim}));
      else if (r == 3)
        p.results.push_back(mean(x, {dim}, true));
      else if (r == 4)
        p.pool.push_back(softmax(x, dim));
      else
        p.pool.push_back(layer_norm(x, {x.size(-1)}));
    }
  }
  if (text) *text = p.text;
  p.pool.insert(p.pool.end(), p.results.begin(), p.results.end());
  return p.pool;
}

// Bitwise, NaN equal to NaN.
inline bool same(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  return true;
}
inline bool close(const Tensor& a, const Tensor& b, double tol) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (std::isinf(x[i]) || std::isinf(y[i])) {
      if (x[i] != y[i]) return false;
      continue;
    }
    if (!(std::abs(x[i] - y[i]) <= tol * (1 + std::abs(y[i])))) return false;
  }
  return true;
}

}  // namespace ember::fusion_test

// Higher-order use of the elementwise rules: a rule is a graph of ember ops, so differentiating
// it (with the engine's create_graph) must match finite differences of the rule's
// own output. Also checks small composite functions, wrapped Scalars included, end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>

#include "elementwise_helpers.h"

namespace ember::test {
namespace {

using Fn = std::function<Tensor(const TensorList&)>;

struct Recorded {
  TensorList leaves, grads;
};

// The gradient of <u, f(xs)>, recorded (create_graph) so it can be differentiated again.
Recorded first_order(const Fn& f, const TensorList& xs, const Tensor& u) {
  Recorded r;
  for (const Tensor& x : xs) r.leaves.push_back(x.clone().requires_grad_());
  Tensor y = f(r.leaves);
  Gradients g = y.backward({.grad_output = u, .create_graph = true});
  for (const Tensor& l : r.leaves) {
    Tensor gi = l.grad(g);
    r.grads.push_back(gi.defined() ? gi : zeros_like(l.detach()));
  }
  return r;
}

// d<v, G>/dx for the recorded first-order gradients G (zeros where G is constant).
TensorList second_order(const Recorded& r, const TensorList& vs) {
  Tensor s;
  for (size_t i = 0; i < r.grads.size(); ++i) {
    Tensor t = (r.grads[i] * vs[i]).sum();
    s = s.defined() ? s + t : t;
  }
  TensorList hv;
  Gradients g;
  if (s.requires_grad()) g = s.backward();
  for (const Tensor& l : r.leaves) {
    Tensor h = g.contains(l) ? l.grad(g) : Tensor();
    hv.push_back(h.defined() ? h : zeros_like(l.detach()));
  }
  return hv;
}

double dot(const TensorList& a, const TensorList& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = a[i].to_vector<double>(), y = b[i].to_vector<double>();
    for (size_t j = 0; j < x.size(); ++j) s += x[j] * y[j];
  }
  return s;
}

// Compares `analytic` (one tensor per input) with central differences of `scalar` in each input.
std::string compare_fd(const TensorList& xs, const TensorList& analytic,
                       const std::function<double(const TensorList&)>& scalar) {
  std::ostringstream err;
  for (size_t i = 0; i < xs.size(); ++i) {
    auto a = analytic[i].to_vector<double>();
    for (int64_t j = 0; j < xs[i].numel(); ++j) {
      TensorList plus = xs, minus = xs;
      plus[i] = xs[i].clone();
      minus[i] = xs[i].clone();
      double x0 = xs[i].to_vector<double>()[size_t(j)];
      double h = 1e-5 * std::max(1.0, std::fabs(x0));
      plus[i].data_ptr<double>()[j] = x0 + h;
      minus[i].data_ptr<double>()[j] = x0 - h;
      double num = (scalar(plus) - scalar(minus)) / (2 * h);
      if (!(std::fabs(a[size_t(j)] - num) <= 1e-6 + 1e-5 * std::fabs(num))) {
        err << "input " << i << " element " << j << ": autodiff " << a[size_t(j)]
            << ", finite differences " << num;
        return err.str();
      }
    }
  }
  return "";
}

// First order: d<u, f>/dx from the tape. Second order: d<v, G>/dx, G the first-order gradient.
std::string check(const Fn& f, const TensorList& xs) {
  manual_seed(3);
  Tensor u = randn(f(xs).shape(), {DType::F64});
  TensorList vs;
  for (const Tensor& x : xs) vs.push_back(randn(x.shape(), {DType::F64}));
  Recorded r = first_order(f, xs, u);
  std::string e = compare_fd(xs, r.grads, [&](const TensorList& in) { return dot({f(in)}, {u}); });
  if (!e.empty()) return "first order: " + e;
  TensorList hv = second_order(r, vs);
  e = compare_fd(xs, hv,
                 [&](const TensorList& in) { return dot(first_order(f, in, u).grads, vs); });
  return e.empty() ? "" : "second order: " + e;
}

Tensor uni(double lo, double hi, const Shape& s = {5}) { return uniform(lo, hi, s, {DType::F64}); }

struct UnaryCase {
  const char* name;
  Tensor (*f)(const Tensor&);
  double lo, hi;
};

TEST(ElementwiseRulesSecondOrder, UnaryOps) {
  manual_seed(21);
  const UnaryCase cases[] = {
      {"neg", [](const Tensor& x) { return neg(x); }, -2, 2},
      {"abs", [](const Tensor& x) { return abs(x); }, -2, 2},
      {"exp", [](const Tensor& x) { return exp(x); }, -2, 2},
      {"exp2", [](const Tensor& x) { return exp2(x); }, -2, 2},
      {"expm1", [](const Tensor& x) { return expm1(x); }, -2, 2},
      {"log", [](const Tensor& x) { return log(x); }, 0.2, 2},
      {"log2", [](const Tensor& x) { return log2(x); }, 0.2, 2},
      {"log10", [](const Tensor& x) { return log10(x); }, 0.2, 2},
      {"log1p", [](const Tensor& x) { return log1p(x); }, -0.5, 2},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, 0.2, 2},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, 0.2, 2},
      {"square", [](const Tensor& x) { return square(x); }, -2, 2},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, 0.2, 2},
      {"sin", [](const Tensor& x) { return sin(x); }, -2, 2},
      {"cos", [](const Tensor& x) { return cos(x); }, -2, 2},
      {"tan", [](const Tensor& x) { return tan(x); }, -1, 1},
      {"asin", [](const Tensor& x) { return asin(x); }, -0.8, 0.8},
      {"acos", [](const Tensor& x) { return acos(x); }, -0.8, 0.8},
      {"atan", [](const Tensor& x) { return atan(x); }, -2, 2},
      {"sinh", [](const Tensor& x) { return sinh(x); }, -2, 2},
      {"cosh", [](const Tensor& x) { return cosh(x); }, -2, 2},
      {"tanh", [](const Tensor& x) { return tanh(x); }, -2, 2},
      {"asinh", [](const Tensor& x) { return asinh(x); }, -2, 2},
      {"acosh", [](const Tensor& x) { return acosh(x); }, 1.5, 3},
      {"atanh", [](const Tensor& x) { return atanh(x); }, -0.8, 0.8},
      {"erf", [](const Tensor& x) { return erf(x); }, -2, 2},
      {"erfinv", [](const Tensor& x) { return erfinv(x); }, -0.8, 0.8},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, -3, 3},
      {"relu", [](const Tensor& x) { return relu(x); }, -2, 2},
      {"gelu", [](const Tensor& x) { return gelu(x); }, -3, 3},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, -3, 3},
      {"silu", [](const Tensor& x) { return silu(x); }, -3, 3},
      {"softplus", [](const Tensor& x) { return softplus(x, 2.0, 5.0); }, -2, 2},
      {"mish", [](const Tensor& x) { return mish(x); }, -3, 3},
      {"elu", [](const Tensor& x) { return elu(x, 0.7); }, -2, 2},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); }, -2, 2},
      {"hardswish", [](const Tensor& x) { return hardswish(x); }, -2.8, 2.8},
      {"hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); }, -2.8, 2.8},
      {"nan_to_num", [](const Tensor& x) { return nan_to_num(x * x); }, -2, 2},
      {"cast", [](const Tensor& x) { return cast(x * x, DType::F64); }, -2, 2},
      {"copy", [](const Tensor& x) { return clone(x * x); }, -2, 2},
  };
  for (const UnaryCase& c : cases) {
    auto f = c.f;
    EXPECT_EQ(check([f](const TensorList& in) { return f(in[0]); }, {uni(c.lo, c.hi)}), "")
        << c.name;
  }
}

TEST(ElementwiseRulesSecondOrder, BinaryOps) {
  manual_seed(22);
  const std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)> cases[] = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a * a, b * a); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a * b, b * b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }},
      {"atan2", [](const Tensor& a, const Tensor& b) { return atan2(a, b); }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a * a, a * b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a * a, a * b); }},
      {"remainder", [](const Tensor& a, const Tensor& b) { return remainder(a * b, b); }},
      {"fmod", [](const Tensor& a, const Tensor& b) { return fmod(a * b, b); }},
  };
  for (const auto& [name, f] : cases) {
    auto fn = f;
    EXPECT_EQ(check([fn](const TensorList& in) { return fn(in[0], in[1]); },
                    {uni(0.5, 2.5), uni(0.3, 2)}), "")
        << name;
  }
}

TEST(ElementwiseRulesSecondOrder, TernaryOps) {
  manual_seed(23);
  TensorList xs = {uni(-2, 2), uni(0.5, 2), uni(0.2, 0.9)};
  std::pair<const char*, Fn> cases[] = {
      {"where", [](const TensorList& v) { return where(v[0] > 0, v[0] * v[1], v[1] * v[2]); }},
      {"clamp", [](const TensorList& v) { return clamp(v[0] * v[1], -v[2], v[2]) * v[1]; }},
      {"lerp", [](const TensorList& v) { return lerp(v[0], v[1], v[2]); }},
      {"addcmul", [](const TensorList& v) { return addcmul(v[0] * v[0], v[1], v[2], 0.7); }},
      {"addcdiv", [](const TensorList& v) { return addcdiv(v[0] * v[0], v[1], v[2], -0.7); }},
  };
  for (const auto& [name, f] : cases) EXPECT_EQ(check(f, xs), "") << name;
}

// Scalars wrap into 0-d tensors that never ask for a gradient: the tape must run through them.
TEST(ElementwiseRulesSecondOrder, CompositeWithWrappedScalars) {
  manual_seed(24);
  Fn f = [](const TensorList& v) {
    const Tensor &x = v[0], &y = v[1];
    Tensor a = tanh(x * 2.5) + pow(x, 3.0) * y / (1 + exp(-y));
    Tensor b = clamp(lerp(x, y, 0.25), 0.2, 1.5) - pow(2.0, y) * sqrt(x);
    return where(x > 1, a, b) + maximum(a, 0.1) * softplus(y);
  };
  EXPECT_EQ(check(f, {uni(0.3, 2, {2, 3}), uni(-1, 1, {2, 3})}), "");
}

}  // namespace
}  // namespace ember::test

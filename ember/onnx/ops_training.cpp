// The optimizer steps of the ai.onnx.preview.training domain (Adagrad, Adam, Momentum), as
// ember's elementwise ops on each tensor group. R (the learning rate) and T (the step count) are
// scalars, read on the host. The formulas are the operator definitions' reference ones.
#include <cmath>

#include "ember/onnx/ops.h"

namespace ember::onnx::detail {
namespace {

// R, T, then `groups` lists of n tensors each (X..., G..., ...): n and the list starts.
struct Groups {
  double r = 0;
  int64_t t = 0;
  size_t n = 0;
  const Tensor& at(const OpArgs& a, size_t group, size_t k) const { return a[2 + group * n + k]; }
};

Groups groups_of(const OpArgs& a, size_t groups) {
  if (a.size() < 2 || (a.size() - 2) % groups != 0)
    invalid(a.node, "expected R, T and " + std::to_string(groups) + " equal lists of tensors, got " +
                        std::to_string(a.size()) + " inputs");
  return {host_doubles(a[0]).at(0), host_ints(a[1]).at(0), (a.size() - 2) / groups};
}

Tensor regularized(const Tensor& x, const Tensor& g, double norm) {
  return norm == 0 ? g : add(mul(x, Scalar(norm)), g);
}

// Inputs R, T, X..., G..., H...; outputs X_new..., H_new...
TensorList adagrad(const OpArgs& a) {
  Groups q = groups_of(a, 3);
  const double decay = a.node.f("decay_factor", 0.0), eps = a.node.f("epsilon", 1e-6);
  const double norm = a.node.f("norm_coefficient", 0.0);
  const double r = q.r / (1 + double(q.t) * decay);
  TensorList xs, hs;
  for (size_t k = 0; k < q.n; ++k) {
    const Tensor& x = q.at(a, 0, k);
    Tensor g = regularized(x, q.at(a, 1, k), norm);
    Tensor h = add(q.at(a, 2, k), mul(g, g));
    xs.push_back(sub(x, mul(div(g, add(sqrt(h), Scalar(eps))), Scalar(r))));
    hs.push_back(h);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

// Inputs R, T, X..., G..., V..., H...; outputs X_new..., V_new..., H_new...
TensorList adam(const OpArgs& a) {
  Groups q = groups_of(a, 4);
  const double alpha = a.node.f("alpha", 0.9), beta = a.node.f("beta", 0.999);
  const double eps = a.node.f("epsilon", 1e-6), norm = a.node.f("norm_coefficient", 0.0);
  const double post = a.node.f("norm_coefficient_post", 0.0);
  const double t = double(q.t);
  const double r = q.t > 0 ? q.r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t))
                           : q.r;
  TensorList xs, vs, hs;
  for (size_t k = 0; k < q.n; ++k) {
    const Tensor& x = q.at(a, 0, k);
    Tensor g = regularized(x, q.at(a, 1, k), norm);
    Tensor v = add(mul(q.at(a, 2, k), Scalar(alpha)), mul(g, Scalar(1 - alpha)));
    Tensor h = add(mul(q.at(a, 3, k), Scalar(beta)), mul(mul(g, g), Scalar(1 - beta)));
    Tensor x_new = sub(x, mul(div(v, add(sqrt(h), Scalar(eps))), Scalar(r)));
    xs.push_back(post == 0 ? x_new : mul(x_new, Scalar(1 - post)));
    vs.push_back(v);
    hs.push_back(h);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

// Inputs R, T, X..., G..., V...; outputs X_new..., V_new... (mode standard or nesterov).
TensorList momentum(const OpArgs& a) {
  Groups q = groups_of(a, 3);
  const double alpha = a.node.f("alpha", 0.0), norm = a.node.f("norm_coefficient", 0.0);
  const double beta = q.t > 0 ? a.node.f("beta", 0.0) : 1.0;
  const std::string mode = a.node.s("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    invalid(a.node, "mode '" + mode + "': expected standard or nesterov");
  TensorList xs, vs;
  for (size_t k = 0; k < q.n; ++k) {
    const Tensor& x = q.at(a, 0, k);
    Tensor g = regularized(x, q.at(a, 1, k), norm);
    Tensor v = add(mul(q.at(a, 2, k), Scalar(alpha)), mul(g, Scalar(beta)));
    Tensor step = mode == "standard" ? v : add(g, mul(v, Scalar(alpha)));
    xs.push_back(sub(x, mul(step, Scalar(q.r))));
    vs.push_back(v);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

}  // namespace

void add_training_ops(OpTable& t) {
  t["ai.onnx.preview.training.Adagrad"] = adagrad;
  t["ai.onnx.preview.training.Adam"] = adam;
  t["ai.onnx.preview.training.Momentum"] = momentum;
}

}  // namespace ember::onnx::detail

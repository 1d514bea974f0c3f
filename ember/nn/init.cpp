// Parameter initialisers with PyTorch's formulas (torch/nn/init.py).
#include "ember/nn/init.h"

#include <cmath>

#include "ember/autodiff.h"
#include "ember/error.h"

namespace ember::nn::init {

namespace {
int64_t receptive(const Tensor& w) {
  int64_t r = 1;
  for (int64_t d = 2; d < w.dim(); ++d) r *= w.shape()[d];
  return r;
}
void check_fans(const Tensor& w, const char* op) {
  if (w.dim() < 2)
    detail::throw_value(op,
                        "expected a tensor with at least 2 dims, found " + std::to_string(w.dim()));
}
}  // namespace

int64_t fan_in(const Tensor& w) {
  check_fans(w, "fan_in");
  return w.shape()[1] * receptive(w);
}

int64_t fan_out(const Tensor& w) {
  check_fans(w, "fan_out");
  return w.shape()[0] * receptive(w);
}

double fan_in_bound(const Tensor& w) {
  int64_t f = fan_in(w);
  return f > 0 ? 1.0 / std::sqrt(double(f)) : 0.0;
}

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "sigmoid" || nl.rfind("conv", 0) == 0) return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nl == "selu") return 3.0 / 4.0;
  detail::throw_value("calculate_gain", "unknown nonlinearity \"" + nl + "\"");
}

Tensor& uniform_(Tensor& t, double lo, double hi) {
  NoGradGuard ng;
  t.uniform_(lo, hi);
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std) {
  NoGradGuard ng;
  t.normal_(mean, std);
  return t;
}

Tensor& constant_(Tensor& t, double v) {
  NoGradGuard ng;
  t.fill_(v);
  return t;
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1); }

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& nl) {
  int64_t f = fan_in(t);
  if (f == 0) return t;  // PyTorch warns and leaves a zero-element tensor alone
  double bound = std::sqrt(3.0) * calculate_gain(nl, a) / std::sqrt(double(f));
  return uniform_(t, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& t, double a, const std::string& nl) {
  int64_t f = fan_in(t);
  if (f == 0) return t;
  return normal_(t, 0, calculate_gain(nl, a) / std::sqrt(double(f)));
}

Tensor& xavier_uniform_(Tensor& t, double gain) {
  double bound = gain * std::sqrt(6.0 / double(fan_in(t) + fan_out(t)));
  return uniform_(t, -bound, bound);
}

Tensor& xavier_normal_(Tensor& t, double gain) {
  return normal_(t, 0, gain * std::sqrt(2.0 / double(fan_in(t) + fan_out(t))));
}

}  // namespace ember::nn::init

// Activation modules: thin wrappers over the unary ops, with PyTorch's printed options.
#include "ember/nn/activation.h"

#include "ember/error.h"
#include "ember/nn/functional.h"
#include "ember/nn/repr.h"
#include "ember/ops/binary.h"
#include "ember/ops/creation.h"
#include "ember/ops/layout.h"
#include "ember/ops/unary.h"

namespace ember::nn {

namespace {
std::string num(double d) { return fmt::py_float(d); }
}  // namespace

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor SiLU::forward(const Tensor& x) { return silu(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Mish::forward(const Tensor& x) { return mish(x); }
Tensor Hardswish::forward(const Tensor& x) { return hardswish(x); }
Tensor Hardsigmoid::forward(const Tensor& x) { return hardsigmoid(x); }

Tensor ReLU6::forward(const Tensor& x) { return clamp(x, Scalar(0.0), Scalar(6.0)); }
Tensor Softsign::forward(const Tensor& x) { return x / (abs(x) + 1.0); }
Tensor LogSigmoid::forward(const Tensor& x) { return -softplus(-x); }
Tensor SELU::forward(const Tensor& x) {
  // The constants of Klambauer et al. that PyTorch uses.
  return elu(x, 1.6732632423543772848170429916717) * 1.0507009873554804934193349852946;
}
Tensor Tanhshrink::forward(const Tensor& x) { return x - tanh(x); }

Tensor Hardtanh::forward(const Tensor& x) { return clamp(x, Scalar(min_val), Scalar(max_val)); }
std::string Hardtanh::extra_repr() const {
  return "min_val=" + num(min_val) + ", max_val=" + num(max_val);
}
std::shared_ptr<Module> Hardtanh::clone() const {
  return std::make_shared<Hardtanh>(min_val, max_val);
}

Tensor CELU::forward(const Tensor& x) { return elu(x * (1.0 / alpha), 1.0) * alpha; }
std::string CELU::extra_repr() const { return "alpha=" + num(alpha); }
std::shared_ptr<Module> CELU::clone() const { return std::make_shared<CELU>(alpha); }

Tensor Threshold::forward(const Tensor& x) { return where(x > threshold, x, Scalar(value)); }
std::string Threshold::extra_repr() const {
  return "threshold=" + num(threshold) + ", value=" + num(value);
}
std::shared_ptr<Module> Threshold::clone() const {
  return std::make_shared<Threshold>(threshold, value);
}

Tensor GLU::forward(const Tensor& x) {
  int64_t d = dim < 0 ? dim + x.dim() : dim;
  if (d < 0 || d >= x.dim() || x.shape()[d] % 2 != 0)
    ember::detail::throw_shape("GLU", "expected an even size at dim " + std::to_string(dim) +
                                          ", found shape " + shape_str(x.shape()));
  TensorList h = chunk(x, 2, d);
  return h[0] * sigmoid(h[1]);
}
std::string GLU::extra_repr() const { return "dim=" + std::to_string(dim); }
std::shared_ptr<Module> GLU::clone() const { return std::make_shared<GLU>(dim); }

Tensor Softmin::forward(const Tensor& x) { return functional::softmax(-x, dim); }
std::string Softmin::extra_repr() const { return "dim=" + std::to_string(dim); }
std::shared_ptr<Module> Softmin::clone() const { return std::make_shared<Softmin>(dim); }

PReLU::PReLU(const PReLUOptions& o) : options(o) {
  if (o.num_parameters < 1)
    ember::detail::throw_value(
        "PReLU", "expected num_parameters >= 1, found " + std::to_string(o.num_parameters));
  weight = full({o.num_parameters}, o.init, fmt::topts(o.param));
  register_parameter("weight", weight);
}
Tensor PReLU::forward(const Tensor& x) {
  Tensor w = weight;
  if (options.num_parameters > 1) {  // one slope per channel (dim 1, or dim 0 unbatched)
    int64_t c = x.dim() >= 2 ? 1 : 0;
    if (x.dim() == 0 || x.shape()[c] != options.num_parameters)
      ember::detail::throw_shape("PReLU", "expected " + std::to_string(options.num_parameters) +
                                              " channels, found shape " + shape_str(x.shape()));
    Shape s(size_t(x.dim() - c), 1);
    s[0] = options.num_parameters;
    w = weight.reshape(s);
  }
  return where(x >= 0.0, x, x * w);
}
std::string PReLU::extra_repr() const {
  return "num_parameters=" + std::to_string(options.num_parameters);
}
std::shared_ptr<Module> PReLU::clone() const {
  auto c = std::make_shared<PReLU>(options);
  c->copy_state_from(*this);
  return c;
}

Tensor GELU::forward(const Tensor& x) { return gelu(x, approximate); }
std::string GELU::extra_repr() const { return "approximate='" + approximate + "'"; }
std::shared_ptr<Module> GELU::clone() const { return std::make_shared<GELU>(approximate); }

Tensor LeakyReLU::forward(const Tensor& x) { return leaky_relu(x, negative_slope); }
std::string LeakyReLU::extra_repr() const { return "negative_slope=" + num(negative_slope); }
std::shared_ptr<Module> LeakyReLU::clone() const {
  return std::make_shared<LeakyReLU>(negative_slope);
}

Tensor ELU::forward(const Tensor& x) { return elu(x, alpha); }
std::string ELU::extra_repr() const { return "alpha=" + num(alpha); }
std::shared_ptr<Module> ELU::clone() const { return std::make_shared<ELU>(alpha); }

Tensor Softplus::forward(const Tensor& x) { return softplus(x, beta, threshold); }
std::string Softplus::extra_repr() const {
  return "beta=" + num(beta) + ", threshold=" + num(threshold);
}
std::shared_ptr<Module> Softplus::clone() const {
  return std::make_shared<Softplus>(beta, threshold);
}

Tensor Softmax::forward(const Tensor& x) { return functional::softmax(x, dim); }
std::string Softmax::extra_repr() const { return "dim=" + std::to_string(dim); }
std::shared_ptr<Module> Softmax::clone() const { return std::make_shared<Softmax>(dim); }

Tensor LogSoftmax::forward(const Tensor& x) { return functional::log_softmax(x, dim); }
std::string LogSoftmax::extra_repr() const { return "dim=" + std::to_string(dim); }
std::shared_ptr<Module> LogSoftmax::clone() const { return std::make_shared<LogSoftmax>(dim); }

}  // namespace ember::nn

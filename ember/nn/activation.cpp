// Activation modules: thin wrappers over the unary ops, with PyTorch's printed options.
#include "ember/nn/activation.h"

#include "ember/nn/functional.h"
#include "ember/nn/repr.h"
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

#pragma once
// Activation functions as modules (no parameters), for Sequential and printed summaries.
#include <memory>
#include <string>

#include "ember/nn/module.h"

namespace ember::nn {

// A parameterless activation: forward applies the function, clone makes a new one.
#define EMBER_ACTIVATION(Name)                                                          \
  class Name : public Module {                                                          \
   public:                                                                              \
    EMBER_MODULE_ARROW(Name)                                                            \
    Tensor forward(const Tensor& x) override;                                           \
    std::shared_ptr<Module> clone() const override { return std::make_shared<Name>(); } \
  };
EMBER_ACTIVATION(ReLU)
EMBER_ACTIVATION(SiLU)
EMBER_ACTIVATION(Tanh)
EMBER_ACTIVATION(Sigmoid)
EMBER_ACTIVATION(Mish)
EMBER_ACTIVATION(Hardswish)
EMBER_ACTIVATION(Hardsigmoid)
EMBER_ACTIVATION(ReLU6)
EMBER_ACTIVATION(Softsign)
EMBER_ACTIVATION(LogSigmoid)
EMBER_ACTIVATION(SELU)
EMBER_ACTIVATION(Tanhshrink)
#undef EMBER_ACTIVATION

/// approximate: "none" or "tanh".
class GELU : public Module {
 public:
  EMBER_MODULE_ARROW(GELU)
  explicit GELU(std::string approximate = "none") : approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const std::string approximate;
};

class LeakyReLU : public Module {
 public:
  EMBER_MODULE_ARROW(LeakyReLU)
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double negative_slope;
};

class ELU : public Module {
 public:
  EMBER_MODULE_ARROW(ELU)
  explicit ELU(double alpha = 1.0) : alpha(alpha) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double alpha;
};

class Softplus : public Module {
 public:
  EMBER_MODULE_ARROW(Softplus)
  explicit Softplus(double beta = 1.0, double threshold = 20.0)
      : beta(beta), threshold(threshold) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double beta, threshold;
};

class Softmax : public Module {
 public:
  EMBER_MODULE_ARROW(Softmax)
  explicit Softmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const int64_t dim;
};

class LogSoftmax : public Module {
 public:
  EMBER_MODULE_ARROW(LogSoftmax)
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const int64_t dim;
};

class Hardtanh : public Module {
 public:
  EMBER_MODULE_ARROW(Hardtanh)
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0)
      : min_val(min_val), max_val(max_val) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double min_val, max_val;
};

class CELU : public Module {
 public:
  EMBER_MODULE_ARROW(CELU)
  explicit CELU(double alpha = 1.0) : alpha(alpha) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double alpha;
};

/// y = x where x > threshold, else value.
class Threshold : public Module {
 public:
  EMBER_MODULE_ARROW(Threshold)
  Threshold(double threshold, double value) : threshold(threshold), value(value) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double threshold, value;
};

/// Splits `dim` in halves a, b and returns a * sigmoid(b).
class GLU : public Module {
 public:
  EMBER_MODULE_ARROW(GLU)
  explicit GLU(int64_t dim = -1) : dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const int64_t dim;
};

class Softmin : public Module {
 public:
  EMBER_MODULE_ARROW(Softmin)
  explicit Softmin(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const int64_t dim;
};

struct PReLUOptions {
  int64_t num_parameters = 1;  // 1 (shared) or the channel count (dim 1 of the input)
  double init = 0.25;
  ParamOptions param = {};
};
/// max(0, x) + weight * min(0, x) with a learned slope.
class PReLU : public Module {
 public:
  EMBER_MODULE_ARROW(PReLU)
  explicit PReLU(const PReLUOptions& o = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight;
  const PReLUOptions options;
};

}  // namespace ember::nn

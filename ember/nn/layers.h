#pragma once
// Basic layers: Linear, Identity, Flatten, convolutions, pooling, Dropout, Embedding and
// activations. Options are structs for designated initializers:
// `nn::Conv2d conv{{.in = 3, .out = 8, .kernel = 3, .padding = 1}};`.
// Initialisation follows PyTorch's defaults (kaiming_uniform(a=sqrt(5)) weights, biases
// uniform(+-1/sqrt(fan_in))) using ember's seeded generator (manual_seed).
#include <optional>
#include <string>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

/// One value for every spatial dim (`3`) or one per dim (`{3, 5}`).
struct Ints {
  Ints(int64_t v) : v({v}) {}                       // NOLINT: implicit by design
  Ints(std::initializer_list<int64_t> l) : v(l) {}  // NOLINT
  Ints(const Shape& s) : v(s) {}                    // NOLINT
  Shape v;
};

/// Options for new parameters: dtype and device (defaults: the default dtype and device).
struct ParamOptions {
  std::optional<DType> dtype;
  std::optional<Device> device;
};

struct LinearOptions {
  int64_t in = 0, out = 0;
  bool bias = true;
  ParamOptions param = {};
};
/// y = x W^T + b; weight [out, in], bias [out].
class Linear : public Module {
 public:
  explicit Linear(const LinearOptions& o);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  /// Re-draws weight and bias from PyTorch's default distributions.
  void reset_parameters();
  Tensor weight, bias;
  const LinearOptions options;
};

struct ConvOptions {
  int64_t in = 0, out = 0;
  Ints kernel = 1;
  Ints stride = 1;
  Ints padding = 0;
  Ints dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  ParamOptions param = {};
};
/// Conv over `Dims` spatial dims; weight [out, in/groups, k...], bias [out].
template <int Dims>
class ConvNd : public Module {
 public:
  explicit ConvNd(const ConvOptions& o);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Conv" + std::to_string(Dims) + "d"; }
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  void reset_parameters();
  Tensor weight, bias;
  const ConvOptions options;
};
using Conv1d = ConvNd<1>;
using Conv2d = ConvNd<2>;

struct PoolOptions {
  Ints kernel = 1;
  std::optional<Ints> stride;  // defaults to kernel
  Ints padding = 0;
  Ints dilation = 1;  // max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
};
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const PoolOptions& o) : options(o) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const PoolOptions options;
};
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const PoolOptions& o) : options(o) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const PoolOptions options;
};
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Ints output_size) : output_size(output_size.v) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const Shape output_size;
};

class Identity : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
  std::shared_ptr<Module> clone() const override;
};

struct FlattenOptions {
  int64_t start_dim = 1, end_dim = -1;
};
class Flatten : public Module {
 public:
  explicit Flatten(const FlattenOptions& o = {}) : options(o) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const FlattenOptions options;
};

/// Zeroes elements with probability p in training mode; the identity in eval mode.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const double p;
};

struct EmbeddingOptions {
  int64_t num = 0, dim = 0;
  std::optional<int64_t> padding_idx;
  ParamOptions param = {};
};
/// A lookup table [num, dim] drawn from N(0, 1); the padding row starts at zero.
class Embedding : public Module {
 public:
  explicit Embedding(const EmbeddingOptions& o);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  void reset_parameters();
  Tensor weight;
  const EmbeddingOptions options;
};

}  // namespace ember::nn

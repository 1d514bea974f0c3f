#pragma once
// Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d, with PyTorch's default initialisation
// (kaiming_uniform(a=sqrt(5)) weights, biases uniform(+-1/sqrt(fan_in))).
#include <string>

#include "ember/nn/module.h"

namespace ember::nn {

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
/// Convolution over `Dims` spatial dims; weight [out, in/groups, k...], bias [out].
template <int Dims>
class ConvNd : public Module {
 public:
  EMBER_MODULE_ARROW(ConvNd)
  explicit ConvNd(const ConvOptions& o);
  /// libtorch's positional form: nn::Conv2d(in, out, kernel, stride, padding).
  ConvNd(int64_t in, int64_t out, Ints kernel, Ints stride = 1, Ints padding = 0)
      : ConvNd(ConvOptions{.in = in, .out = out, .kernel = std::move(kernel),
                           .stride = std::move(stride), .padding = std::move(padding)}) {}
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
using Conv3d = ConvNd<3>;

struct ConvTransposeOptions {
  int64_t in = 0, out = 0;
  Ints kernel = 1;
  Ints stride = 1;
  Ints padding = 0;
  Ints output_padding = 0;
  int64_t groups = 1;
  bool bias = true;
  Ints dilation = 1;
  ParamOptions param = {};
};
/// Transposed convolution; weight [in, out/groups, k...], bias [out].
template <int Dims>
class ConvTransposeNd : public Module {
 public:
  EMBER_MODULE_ARROW(ConvTransposeNd)
  explicit ConvTransposeNd(const ConvTransposeOptions& o);
  ConvTransposeNd(int64_t in, int64_t out, Ints kernel, Ints stride = 1, Ints padding = 0)
      : ConvTransposeNd(ConvTransposeOptions{.in = in, .out = out, .kernel = std::move(kernel),
                                             .stride = std::move(stride),
                                             .padding = std::move(padding)}) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ConvTranspose" + std::to_string(Dims) + "d"; }
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  void reset_parameters();
  Tensor weight, bias;
  const ConvTransposeOptions options;
};
using ConvTranspose1d = ConvTransposeNd<1>;
using ConvTranspose2d = ConvTransposeNd<2>;

}  // namespace ember::nn

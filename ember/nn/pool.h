#pragma once
// Pooling layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d.
#include <optional>
#include <string>

#include "ember/nn/module.h"

namespace ember::nn {

struct PoolOptions {
  Ints kernel = 1;
  std::optional<Ints> stride = {};  // defaults to kernel
  Ints padding = 0;
  Ints dilation = 1;  // max pooling only
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
  /// libtorch's positional arguments (kernel, stride = kernel, padding).
  static PoolOptions positional(int64_t kernel, std::optional<int64_t> stride, int64_t padding) {
    PoolOptions o;
    o.kernel = kernel;
    if (stride) o.stride = Ints(*stride);
    o.padding = padding;
    return o;
  }
};


template <int Dims>
class MaxPoolNd : public Module {
 public:
  EMBER_MODULE_ARROW(MaxPoolNd)
  explicit MaxPoolNd(const PoolOptions& o) : options(o) {}
  /// libtorch's positional form: nn::MaxPool2d(2) (kernel, stride = kernel, padding).
  explicit MaxPoolNd(int64_t kernel, std::optional<int64_t> stride = {}, int64_t padding = 0)
      : options(PoolOptions::positional(kernel, stride, padding)) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool" + std::to_string(Dims) + "d"; }
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const PoolOptions options;
};
using MaxPool1d = MaxPoolNd<1>;
using MaxPool2d = MaxPoolNd<2>;

template <int Dims>
class AvgPoolNd : public Module {
 public:
  EMBER_MODULE_ARROW(AvgPoolNd)
  explicit AvgPoolNd(const PoolOptions& o) : options(o) {}
  /// libtorch's positional form: nn::AvgPool2d(2) (kernel, stride = kernel, padding).
  explicit AvgPoolNd(int64_t kernel, std::optional<int64_t> stride = {}, int64_t padding = 0)
      : options(PoolOptions::positional(kernel, stride, padding)) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AvgPool" + std::to_string(Dims) + "d"; }
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const PoolOptions options;
};
using AvgPool1d = AvgPoolNd<1>;
using AvgPool2d = AvgPoolNd<2>;

/// Average pooling to a fixed output size (one value for every spatial dim, or one per dim).
template <int Dims>
class AdaptiveAvgPoolNd : public Module {
 public:
  EMBER_MODULE_ARROW(AdaptiveAvgPoolNd)
  explicit AdaptiveAvgPoolNd(Ints output_size) : output_size(output_size.v) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AdaptiveAvgPool" + std::to_string(Dims) + "d"; }
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  const Shape output_size;
};
using AdaptiveAvgPool1d = AdaptiveAvgPoolNd<1>;
using AdaptiveAvgPool2d = AdaptiveAvgPoolNd<2>;

}  // namespace ember::nn

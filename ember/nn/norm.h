#pragma once
// Normalisation layers: BatchNorm1d/2d (running statistics), LayerNorm, GroupNorm, RMSNorm.
// Affine weights start at one and biases at zero, as in PyTorch.
#include <optional>
#include <type_traits>

#include "ember/nn/layers.h"

namespace ember::nn {

struct BatchNormOptions {
  int64_t features = 0;
  double eps = 1e-5;
  /// Weight of the new batch statistics; unset gives a cumulative average over batches.
  std::optional<double> momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
  ParamOptions param = {};
};
/// Batch statistics in training mode (updating running_mean/var and num_batches_tracked);
/// the running statistics in eval mode. Dims = 1 takes [N, C] or [N, C, L]; Dims = 2 [N, C, H, W].
template <int Dims>
class BatchNormNd : public Module {
 public:
  EMBER_MODULE_ARROW(BatchNormNd)
  explicit BatchNormNd(const BatchNormOptions& o);
  /// libtorch's positional form: nn::BatchNorm2d(32). A template, so that a braced argument
  /// always means the options (GCC would find `{.features = 3}` ambiguous otherwise).
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  explicit BatchNormNd(T features) : BatchNormNd(BatchNormOptions{.features = int64_t(features)}) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "BatchNorm" + std::to_string(Dims) + "d"; }
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  const BatchNormOptions options;
};
using BatchNorm1d = BatchNormNd<1>;
using BatchNorm2d = BatchNormNd<2>;

struct LayerNormOptions {
  Shape shape = {};  // the trailing dims normalised
  double eps = 1e-5;
  bool elementwise_affine = true;
  bool bias = true;
  ParamOptions param = {};
};
class LayerNorm : public Module {
 public:
  EMBER_MODULE_ARROW(LayerNorm)
  explicit LayerNorm(const LayerNormOptions& o);
  /// The normalised shape alone: nn::LayerNorm(Shape{128}). A template, so that a braced
  /// argument always means the options: GCC finds `LayerNorm({.shape = {6}})` ambiguous beside
  /// any constructor a braced list of ints could reach, so libtorch's `LayerNorm({128})` is out.
  template <class S, std::enable_if_t<std::is_convertible_v<const S&, Shape>, int> = 0>
  explicit LayerNorm(const S& normalized_shape)
      : LayerNorm(LayerNormOptions{.shape = Shape(normalized_shape)}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight, bias;
  const LayerNormOptions options;
};

struct GroupNormOptions {
  int64_t groups = 1, channels = 0;
  double eps = 1e-5;
  bool affine = true;
  ParamOptions param = {};
};
class GroupNorm : public Module {
 public:
  EMBER_MODULE_ARROW(GroupNorm)
  explicit GroupNorm(const GroupNormOptions& o);
  GroupNorm(int64_t groups, int64_t channels)
      : GroupNorm(GroupNormOptions{.groups = groups, .channels = channels}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight, bias;
  const GroupNormOptions options;
};

struct RMSNormOptions {
  Shape shape = {};
  std::optional<double> eps = {};  // unset: the dtype's machine epsilon
  bool elementwise_affine = true;
  ParamOptions param = {};
};
class RMSNorm : public Module {
 public:
  EMBER_MODULE_ARROW(RMSNorm)
  explicit RMSNorm(const RMSNormOptions& o);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight;
  const RMSNormOptions options;
};

}  // namespace ember::nn

namespace ember::nn {

struct InstanceNormOptions {
  int64_t features = 0;
  double eps = 1e-5;
  bool affine = false;
  ParamOptions param = {};
};
/// Normalises each channel of each sample over its spatial dims (no running statistics).
/// Dims = 1 takes [N, C, L] or [C, L]; Dims = 2 [N, C, H, W] or [C, H, W].
template <int Dims>
class InstanceNormNd : public Module {
 public:
  EMBER_MODULE_ARROW(InstanceNormNd)
  explicit InstanceNormNd(const InstanceNormOptions& o);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "InstanceNorm" + std::to_string(Dims) + "d"; }
  std::string extra_repr() const override;
  std::shared_ptr<Module> clone() const override;
  Tensor weight, bias;
  const InstanceNormOptions options;
};
using InstanceNorm1d = InstanceNormNd<1>;
using InstanceNorm2d = InstanceNormNd<2>;

}  // namespace ember::nn
